// Added tokens (tokenizer.json "added_tokens"): found in the input text before the model runs, with
// HF's rules — leftmost-longest matching, lstrip / rstrip / single_word, tokens matched in the raw
// text (normalized=false) or in the normalized text (normalized=true), and special tokens kept as
// plain text when the caller asks for split_special_tokens.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/tokenizer/bpe.h"

namespace inferdesk::tok {

class Normalizer;

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
  bool normalized = false;
};

// A piece of input after added-token extraction: either an added token id, or text to encode.
struct Segment {
  std::optional<int32_t> token;
  std::string_view text;   // for text segments (points into the input or `storage`)
  bool at_origin = false;  // text starts at offset 0 of the original input
};

class AddedVocab {
 public:
  AddedVocab() = default;
  // Builds the matchers; `normalizer` (may be null) computes the patterns of normalized tokens.
  AddedVocab(std::vector<AddedToken> tokens, const Normalizer* normalizer);

  // Splits `text` into added tokens and normalized text segments (HF extract_and_normalize).
  // Normalized strings are kept alive in `storage`.
  void extract_and_normalize(std::string_view text, const Normalizer* normalizer, bool split_special,
                             std::vector<Segment>& out, std::vector<std::string>& storage) const;

  const AddedToken* find_id(int32_t id) const;
  const AddedToken* find_content(std::string_view content) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  // Byte trie over token contents; leftmost-longest scan.
  struct Trie {
    struct Node {
      std::vector<std::pair<unsigned char, int32_t>> next;  // sorted by byte
      int32_t token = -1;                                   // index into tokens_
    };
    std::vector<Node> nodes{Node{}};
    std::array<bool, 256> first_byte{};
    void add(std::string_view s, int32_t token_index);
    // Longest token starting at `pos`: (token index, length) or (-1, 0).
    std::pair<int32_t, size_t> longest_at(std::string_view s, size_t pos) const;
    bool empty() const { return nodes.size() == 1; }
  };
  struct Match {
    std::optional<int32_t> id;
    size_t start, end;
  };

  void find_matches(std::string_view s, const Trie& trie, bool split_special, std::vector<Match>& out) const;

  std::vector<AddedToken> tokens_;
  std::unordered_map<int32_t, size_t> by_id_;
  std::unordered_map<std::string, size_t, StringHash, std::equal_to<>> by_content_;
  Trie raw_trie_;         // normalized == false
  Trie normalized_trie_;  // normalized == true, patterns normalized
};

}  // namespace inferdesk::tok
