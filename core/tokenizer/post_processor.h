// Post-processors (tokenizer.json "post_processor"): add the special tokens around an encoding
// when add_special_tokens is set — TemplateProcessing, Bert/Roberta processing, Sequence,
// ByteLevel (no effect on ids).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace inferdesk::tok {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual void process(std::vector<int32_t>& ids) const = 0;
};

std::unique_ptr<PostProcessor> make_post_processor(const nlohmann::json& j, const std::string& where);
// `prefix` ids, the sequence, then `suffix` ids (what transformers builds from add_bos_token /
// add_eos_token for its Llama tokenizer class).
std::unique_ptr<PostProcessor> make_wrap_post_processor(std::vector<int32_t> prefix, std::vector<int32_t> suffix);

}  // namespace inferdesk::tok
