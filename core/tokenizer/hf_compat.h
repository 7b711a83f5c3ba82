// What transformers' AutoTokenizer adds on top of a tokenizer file: which tokenizer class it picks
// (from tokenizer_config.json's tokenizer_class and config.json's model_type), the pipeline some
// classes define in code instead of reading it from tokenizer.json, class defaults for special
// tokens, and the added / special tokens declared in tokenizer_config.json.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tokenizer/added_vocab.h"
#include "core/tokenizer/bpe.h"

namespace inferdesk::tok {

struct TokenizerImpl;

struct HfConfig {
  nlohmann::json tokenizer_config = nlohmann::json::object();
  std::string name;             // tokenizer_config.json path, for messages
  std::string model_type;       // config.json model_type ("" when absent)
  std::string tokenizer_class;  // tokenizer_config.json tokenizer_class without "Fast"
  std::string hf_class;         // the class AutoTokenizer instantiates
  std::optional<std::string> bos, eos, unk, pad;
  std::vector<std::string> additional_special_tokens;
  std::optional<bool> add_bos_token, add_eos_token, add_prefix_space, legacy;
};

HfConfig parse_hf_config(std::string_view tokenizer_config_text, std::string_view model_config_text,
                         const std::string& name);

// The class transformers' AutoTokenizer picks for (model_type, tokenizer_class).
std::string auto_tokenizer_class(const std::string& model_type, const std::string& tokenizer_class);

// Copies bos/eos/unk/pad/additional_special_tokens from special_tokens_map.json into the config
// text where the config does not define them.
std::string merge_special_tokens_map(const std::string& config_text, const std::string& map_text,
                                     const std::string& map_name);

// Class-defined pipelines (before the model is built: may change the BPE options).
void apply_class_pipeline(TokenizerImpl& t, BpeOptions& opts, const HfConfig& cfg);
void build_vocab_merges_pipeline(TokenizerImpl& t, BpeOptions& opts, const HfConfig& cfg, const std::string& name);
// Class-defined post-processors (after the vocabulary is known).
void apply_class_post_processor(TokenizerImpl& t, const HfConfig& cfg);

// tokenizer_config.json added_tokens_decoder entries.
std::vector<AddedToken> config_added_tokens(const HfConfig& cfg);
// Adds the config's added tokens and special tokens (bos, eos, unk, pad, additional) that exist
// in the vocabulary but are not yet added tokens, as transformers registers them.
void add_config_tokens(std::vector<AddedToken>& added, const HfConfig& cfg, const BpeModel& model);

}  // namespace inferdesk::tok
