#include "core/tokenizer/added_vocab.h"

#include <algorithm>

#include "core/tokenizer/pipeline.h"
#include "core/tokenizer/unicode_norm.h"
#include "core/tokenizer/utf8.h"

namespace inferdesk::tok {
namespace {

char32_t last_char(std::string_view s) {
  size_t start = s.size() - 1;
  while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
  return next_code_point(s, start);
}

// Byte offset in s where its trailing whitespace starts.
size_t trailing_space_start(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    size_t i = start;
    if (!is_unicode_whitespace(next_code_point(s, i))) break;
    end = start;
  }
  return end;
}

// Byte length of the leading whitespace of s.
size_t leading_space_len(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    if (!is_unicode_whitespace(next_code_point(s, j))) break;
    i = j;
  }
  return i;
}

}  // namespace

void AddedVocab::Trie::add(std::string_view s, int32_t token_index) {
  if (s.empty()) return;
  first_byte[static_cast<unsigned char>(s[0])] = true;
  size_t node = 0;
  for (unsigned char b : s) {
    auto& next = nodes[node].next;
    auto it = std::lower_bound(next.begin(), next.end(), b, [](const auto& e, unsigned char v) { return e.first < v; });
    if (it != next.end() && it->first == b) {
      node = static_cast<size_t>(it->second);
    } else {
      const auto child = static_cast<int32_t>(nodes.size());
      next.insert(it, {b, child});
      nodes.emplace_back();
      node = static_cast<size_t>(child);
    }
  }
  if (nodes[node].token < 0) nodes[node].token = token_index;  // first definition wins
}

std::pair<int32_t, size_t> AddedVocab::Trie::longest_at(std::string_view s, size_t pos) const {
  std::pair<int32_t, size_t> best{-1, 0};
  size_t node = 0;
  for (size_t i = pos; i < s.size(); ++i) {
    const auto& next = nodes[node].next;
    const auto b = static_cast<unsigned char>(s[i]);
    auto it = std::lower_bound(next.begin(), next.end(), b, [](const auto& e, unsigned char v) { return e.first < v; });
    if (it == next.end() || it->first != b) break;
    node = static_cast<size_t>(it->second);
    if (nodes[node].token >= 0) best = {nodes[node].token, i + 1 - pos};
  }
  return best;
}

AddedVocab::AddedVocab(std::vector<AddedToken> tokens, const Normalizer* normalizer) : tokens_(std::move(tokens)) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    by_id_.emplace(tokens_[i].id, i);
    by_content_.emplace(tokens_[i].content, i);
    const auto& t = tokens_[i];
    if (t.normalized && normalizer)
      normalized_trie_.add(normalizer->normalize(t.content), static_cast<int32_t>(i));
    else if (t.normalized)
      normalized_trie_.add(t.content, static_cast<int32_t>(i));
    else
      raw_trie_.add(t.content, static_cast<int32_t>(i));
  }
}

const AddedToken* AddedVocab::find_id(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

const AddedToken* AddedVocab::find_content(std::string_view content) const {
  auto it = by_content_.find(content);
  return it == by_content_.end() ? nullptr : &tokens_[it->second];
}

// HF AddedVocabulary::find_matches: non-overlapping leftmost-longest matches, then the token's
// single_word / lstrip / rstrip rules. Gaps are returned as matches without id.
void AddedVocab::find_matches(std::string_view s, const Trie& trie, bool split_special, std::vector<Match>& out) const {
  size_t start_offset = 0;
  size_t pos = 0;
  while (pos < s.size()) {
    if (!trie.first_byte[static_cast<unsigned char>(s[pos])]) {
      ++pos;
      continue;
    }
    const auto [index, len] = trie.longest_at(s, pos);
    if (index < 0) {
      ++pos;
      continue;
    }
    const AddedToken& tok = tokens_[static_cast<size_t>(index)];
    size_t start = pos, stop = pos + len;
    pos = stop;  // the scan resumes after the match whatever the rules below decide
    if (split_special && tok.special) continue;
    if (tok.single_word) {
      const bool start_space = start == 0 || !is_alnum_char(last_char(s.substr(0, start)));
      size_t k = stop;
      const bool stop_space = stop == s.size() || !is_alnum_char(next_code_point(s, k));
      if (!start_space || !stop_space) continue;
    }
    if (tok.lstrip) start = std::max(trailing_space_start(s.substr(0, start)), start_offset);
    if (tok.rstrip) stop += leading_space_len(s.substr(stop));
    if (start_offset < start) out.push_back({std::nullopt, start_offset, start});
    out.push_back({tok.id, start, stop});
    start_offset = stop;
  }
  if (start_offset < s.size()) out.push_back({std::nullopt, start_offset, s.size()});
}

void AddedVocab::extract_and_normalize(std::string_view text, const Normalizer* normalizer, bool split_special,
                                       std::vector<Segment>& out, std::vector<std::string>& storage) const {
  std::vector<Match> raw;
  if (raw_trie_.empty())
    raw.push_back({std::nullopt, 0, text.size()});
  else
    find_matches(text, raw_trie_, split_special, raw);
  // Normalized strings must not move while segments point at them.
  size_t texts = 0;
  for (const auto& m : raw) texts += !m.id && m.end > m.start;
  storage.reserve(storage.size() + texts);
  std::vector<Match> inner;
  for (const auto& m : raw) {
    if (m.end == m.start) continue;
    if (m.id) {
      out.push_back({m.id, {}, false});
      continue;
    }
    std::string_view piece = text.substr(m.start, m.end - m.start);
    if (normalizer) {
      storage.push_back(normalizer->normalize(piece));
      piece = storage.back();
      if (piece.empty()) continue;
    }
    const bool origin = m.start == 0;
    if (normalized_trie_.empty()) {
      out.push_back({std::nullopt, piece, origin});
      continue;
    }
    inner.clear();
    find_matches(piece, normalized_trie_, split_special, inner);
    for (const auto& n : inner) {
      if (n.end == n.start) continue;
      if (n.id)
        out.push_back({n.id, {}, false});
      else
        out.push_back({std::nullopt, piece.substr(n.start, n.end - n.start), origin && n.start == 0});
    }
  }
}

}  // namespace inferdesk::tok
