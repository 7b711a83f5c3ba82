// Blocking convenience over Engine: submit many requests at once (they run through the
// continuous batcher together) and wait for all of them. Used by the CLI and by tests.
#pragma once

#include <vector>

#include "core/engine/engine.h"

namespace inferdesk {

struct GenerationResult {
  std::vector<GeneratedToken> tokens;
  FinishReason reason = FinishReason::None;
  std::string error;
  double time_to_first_token_s = 0;
  double elapsed_s = 0;
  std::vector<double> token_times_s;  // arrival time of each token, since submit

  std::vector<int32_t> token_ids() const;
};

// Results in the order of `requests`. When every request is valid they are queued together
// (Engine::submit_batch), so the batches they run in do not depend on submission timing; otherwise
// one by one, and a request the engine rejects at submit has reason Error.
std::vector<GenerationResult> generate_all(Engine& engine, std::vector<Request> requests);

}  // namespace inferdesk
