// Internal state of a Tokenizer (shared, immutable after loading).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/tokenizer/added_vocab.h"
#include "core/tokenizer/bpe.h"
#include "core/tokenizer/decoder.h"
#include "core/tokenizer/pipeline.h"
#include "core/tokenizer/post_processor.h"

namespace inferdesk::tok {

struct SpecialToken {
  std::optional<std::string> text;
  std::optional<int32_t> id;
};

struct TokenizerImpl {
  std::string name;      // folder or caller-given name, for messages
  std::string hf_class;  // transformers class reproduced
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  bool model_reads_raw_bytes = false;  // ByteLevel mapping deferred to the model
  std::unique_ptr<BpeModel> model;
  AddedVocab added;
  std::unique_ptr<PostProcessor> post_processor;
  std::unique_ptr<Decoder> decoder;
  SpecialToken bos, eos, unk, pad;
  size_t vocab_size = 0;
  int32_t max_id = -1;

  // Token string of an id for decoding; nullptr when skipped (special + skip) — throws for ids
  // that are no token.
  const std::string* token_for_decode(int32_t id, bool skip_special) const;
};

// Loading (loader.cpp).
std::shared_ptr<TokenizerImpl> load_tokenizer_dir(const std::filesystem::path& dir);
std::shared_ptr<TokenizerImpl> load_tokenizer_json(std::string_view tokenizer_json, std::string_view config_json,
                                                   std::string_view model_config_json, const std::string& name);

}  // namespace inferdesk::tok
