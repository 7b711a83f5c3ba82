// A ShareGPT-format conversation file, filtered as vLLM filters it: a JSON array of entries with
// "conversations": [{"from": ..., "value": text}, ...]; entries with fewer than two turns are left
// out; the first turn is the prompt and the second's token count the output length (unless a fixed
// output length overrides it); pairs with a prompt or output under 4 tokens (the output check is
// skipped with an override), a prompt over 1,024 or a total over 2,048 tokens are dropped. The
// entries are shuffled by the seed first, so a subset is a fair sample.
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>

#include "core/bench/workload.h"

namespace inferdesk::bench {

struct ShareGptOptions {
  int32_t num_requests = 1000;
  std::optional<int32_t> output_len;  // overrides the reply's length
  uint64_t seed = 0;
};

// Throws Error(Format) naming the entry for malformed JSON or an entry of the wrong shape.
std::vector<Sample> parse_sharegpt(std::string_view json, const Tokenizer& tok, const ShareGptOptions& o);
// Also Error(NotFound) / Error(Io) for a file that is missing or unreadable.
std::vector<Sample> load_sharegpt(const std::filesystem::path& path, const Tokenizer& tok, const ShareGptOptions& o);

}  // namespace inferdesk::bench
