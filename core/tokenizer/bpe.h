// Byte-pair-encoding model of Hugging Face tokenizers (model.type "BPE"): vocabulary, ranked
// merges, unk / byte-fallback handling, ignore_merges, and a thread-safe cache of piece -> ids.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace inferdesk::tok {

struct BpeOptions {
  std::optional<std::string> unk_token;
  bool byte_fallback = false;
  bool fuse_unk = false;
  bool ignore_merges = false;
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using VocabMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

class BpeModel {
 public:
  // `vocab`: token -> id; `merges`: pairs in rank order. `where` names the source for errors
  // (merges referring to unknown tokens, ids out of range).
  BpeModel(VocabMap vocab, const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions opts,
           const std::string& where);
  ~BpeModel();

  // Appends the ids of one pre-tokenized piece. With `raw_bytes`, `piece` holds raw bytes that
  // stand for their ByteLevel characters (the mapping is applied here, only on cache misses).
  void encode(std::string_view piece, bool raw_bytes, std::vector<int32_t>& out) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // nullptr when the model has no token with this id.
  const std::string* id_to_token(int32_t id) const;
  size_t vocab_size() const { return vocab_.size(); }
  int32_t max_id() const { return static_cast<int32_t>(id_to_token_.size()) - 1; }

 private:
  struct MergeTable;
  struct Cache;
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
    int32_t alive;
  };

  void encode_cached(std::string_view piece, bool raw_bytes, std::vector<int32_t>& out) const;
  void encode_uncached(std::string_view piece, bool raw_bytes, std::vector<int32_t>& out) const;
  void initial_symbols(std::string_view piece, bool raw_bytes, std::vector<Symbol>& syms) const;
  void merge_all(std::vector<Symbol>& syms) const;
  std::optional<int32_t> char_id(std::string_view ch, bool first, bool last) const;

  VocabMap vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<uint8_t> has_id_;
  BpeOptions opts_;
  std::optional<int32_t> unk_id_;
  std::unique_ptr<MergeTable> merges_;
  std::array<int32_t, 256> byte_level_ids_{};  // id of the ByteLevel character of each byte
  std::array<int32_t, 256> fallback_ids_{};    // id of "<0xXX>" for each byte
  std::array<int32_t, 128> ascii_ids_{};       // id of each ASCII character
  bool simple_chars_ = true;                   // no subword prefix / word suffix
  // No vocabulary token contains "x▁" with x != ▁, so no merge can cross the start of a "▁"
  // that follows another character: long pieces are encoded word by word (exactly the same ids).
  bool split_at_marker_ = false;
  std::unique_ptr<Cache> cache_;
};

}  // namespace inferdesk::tok
