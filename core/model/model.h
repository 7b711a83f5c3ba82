// A loaded model: one architecture's forward pass composed from Backend ops.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/model/config.h"
#include "core/model/weights.h"

namespace inferdesk {

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelConfig& config() const = 0;
  // Run one step: the step's tokens through every layer (their K/V written to the cache) and
  // the logits of step.logit_rows into the returned [logit_rows, vocab] F32 tensor, which stays
  // valid until the next forward. Calls backend.begin_step(step) itself.
  virtual Tensor forward(Backend& backend, const StepInput& step) = 0;
  // Allocate activation buffers for steps of up to max_tokens rows and max_logit_rows logits now
  // (the engine calls it before sizing the KV cache, so the memory plan sees them, and so buffers
  // never move under a captured CUDA graph).
  virtual void reserve(Backend& backend, int64_t max_tokens, int64_t max_logit_rows) {}
};

// Build the model for config.model_type from `weights`. Unknown model_type → Unsupported naming
// the supported ones; a missing or mis-shaped tensor → NotFound / Format naming it.
std::unique_ptr<Model> load_model(const ModelConfig& config, WeightSource& weights, Backend& backend,
                                  const LoadProgress& progress = {});

std::vector<std::string> supported_model_types();

}  // namespace inferdesk
