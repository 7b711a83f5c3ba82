// Internal stages of the encode pipeline, mirroring Hugging Face tokenizers: normalizers rewrite a
// piece of text, pre-tokenizers split it into pieces the model encodes one by one. Each stage is
// built from its tokenizer.json object by a make_* factory that throws inferdesk::Error naming the
// file and field on anything malformed or unsupported.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace inferdesk::tok {

// A piece of text on its way to the model. `at_origin`: it starts at offset 0 of the original
// input (what Metaspace's prepend_scheme "first" asks).
struct Piece {
  std::string_view text;
  bool at_origin = false;
};

// Owns the strings that pieces point to once a stage has rewritten them (one per encode call).
class Arena {
 public:
  std::string_view keep(std::string&& s) {
    store_.push_back(std::move(s));
    return store_.back();
  }

 private:
  std::deque<std::string> store_;
};

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string normalize(std::string_view in) const = 0;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces `pieces` by their split (and possibly rewritten) parts. Empty parts are dropped.
  virtual void apply(std::vector<Piece>& pieces, Arena& arena) const = 0;
  // Asks a final ByteLevel stage to leave its byte -> character mapping to the model (which then
  // reads raw bytes); returns true when this stage chain ends with such a ByteLevel stage.
  virtual bool defer_byte_mapping() { return false; }
};

// `where` names the file and JSON path for error messages ("DIR/tokenizer.json: normalizer").
std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& j, const std::string& where);
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& j, const std::string& where);

// Built-in stages used where transformers defines the pipeline in code (tokenizer classes).
std::unique_ptr<Normalizer> make_nfc_normalizer();
std::unique_ptr<PreTokenizer> make_metaspace_pre_tokenizer(std::string replacement, std::string prepend_scheme,
                                                           bool split);
std::unique_ptr<PreTokenizer> make_split_byte_level_pre_tokenizer(const std::string& regex);
std::unique_ptr<PreTokenizer> make_byte_level_pre_tokenizer(bool add_prefix_space, bool use_regex);

}  // namespace inferdesk::tok
