#include "core/tokenizer/bpe.h"

#include <algorithm>
#include <cstdio>

#include "core/tokenizer/byte_level.h"
#include "core/tokenizer/utf8.h"
#include "core/util/error.h"

namespace inferdesk::tok {

namespace {
constexpr std::string_view kMarker = "\xE2\x96\x81";  // ▁, SentencePiece's word-start marker
constexpr size_t kSplitThreshold = 64;                // pieces longer than this are split at words
}  // namespace

// Open-addressing hash table (left id, right id) -> (rank, merged id).
struct BpeModel::MergeTable {
  struct Slot {
    uint64_t key = kEmpty;
    uint32_t rank = 0;
    int32_t new_id = 0;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  std::vector<Slot> slots;
  uint64_t mask = 0;

  explicit MergeTable(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    slots.resize(cap);
    mask = cap - 1;
  }
  static uint64_t key_of(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  size_t slot_of(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 17) & mask; }
  // Later duplicates overwrite earlier ones, as in HF (HashMap collect).
  void insert(int32_t a, int32_t b, uint32_t rank, int32_t new_id) {
    const uint64_t key = key_of(a, b);
    for (size_t i = slot_of(key);; i = (i + 1) & mask) {
      if (slots[i].key == kEmpty || slots[i].key == key) {
        slots[i] = {key, rank, new_id};
        return;
      }
    }
  }
  const Slot* find(int32_t a, int32_t b) const {
    const uint64_t key = key_of(a, b);
    for (size_t i = slot_of(key);; i = (i + 1) & mask) {
      if (slots[i].key == key) return &slots[i];
      if (slots[i].key == kEmpty) return nullptr;
    }
  }
};

// Sharded piece -> ids cache. Bounded: a full shard is cleared.
struct BpeModel::Cache {
  static constexpr size_t kShards = 16;
  static constexpr size_t kMaxPerShard = 16384;
  static constexpr size_t kMaxPieceBytes = 256;
  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> map;
  };
  std::array<Shard, kShards> shards;
  Shard& shard(std::string_view s) { return shards[(std::hash<std::string_view>{}(s) >> 7) % kShards]; }
};

BpeModel::BpeModel(VocabMap vocab, const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions opts,
                   const std::string& where)
    : vocab_(std::move(vocab)), opts_(std::move(opts)), cache_(std::make_unique<Cache>()) {
  constexpr int32_t kMaxId = 1 << 24;  // far above any real vocabulary; bounds the id table
  if (vocab_.empty()) throw Error(ErrorCode::Tokenizer, where + ": vocab is empty (the tokenizer has no tokens)");
  int32_t max_id = -1;
  for (const auto& [tok, id] : vocab_) {
    if (id < 0 || id >= kMaxId)
      throw Error(ErrorCode::Tokenizer, where + ": vocab: token id " + std::to_string(id) + " out of range");
    max_id = std::max(max_id, id);
  }
  // Ids may have gaps, but an id far beyond the vocabulary size is a broken file (and would make
  // the id table huge).
  if (static_cast<size_t>(max_id) >= vocab_.size() * 2 + 65536)
    throw Error(ErrorCode::Tokenizer, where + ": vocab: token id " + std::to_string(max_id) + " is far beyond the " +
                                          std::to_string(vocab_.size()) + " tokens of the vocabulary");
  id_to_token_.resize(static_cast<size_t>(max_id + 1));
  has_id_.assign(static_cast<size_t>(max_id + 1), 0);
  for (const auto& [tok, id] : vocab_) {
    id_to_token_[id] = tok;
    has_id_[id] = 1;
  }
  if (opts_.unk_token) {
    if (auto it = vocab_.find(*opts_.unk_token); it != vocab_.end()) unk_id_ = it->second;
  }
  merges_ = std::make_unique<MergeTable>(merges.size());
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    auto ia = vocab_.find(a), ib = vocab_.find(b);
    if (ia == vocab_.end() || ib == vocab_.end())
      throw Error(ErrorCode::Tokenizer, where + ": merges[" + std::to_string(rank) + "] (\"" + a + " " + b +
                                            "\") refers to token \"" + (ia == vocab_.end() ? a : b) +
                                            "\" that is not in the vocabulary");
    const size_t prefix = opts_.continuing_subword_prefix.size();
    joined = a;
    joined.append(b.size() >= prefix && b.compare(0, prefix, opts_.continuing_subword_prefix) == 0 ? b.substr(prefix)
                                                                                                   : b);
    auto ij = vocab_.find(joined);
    if (ij == vocab_.end())
      throw Error(ErrorCode::Tokenizer, where + ": merges[" + std::to_string(rank) + "] (\"" + a + " " + b +
                                            "\") produces \"" + joined + "\" that is not in the vocabulary");
    merges_->insert(ia->second, ib->second, static_cast<uint32_t>(rank), ij->second);
  }
  simple_chars_ = opts_.continuing_subword_prefix.empty() && opts_.end_of_word_suffix.empty();
  split_at_marker_ = simple_chars_ && vocab_.count(std::string_view(kMarker)) > 0;
  for (auto it = vocab_.begin(); split_at_marker_ && it != vocab_.end(); ++it) {
    const std::string& t = it->first;
    for (size_t p = t.find(kMarker, 1); p != std::string::npos; p = t.find(kMarker, p + 1)) {
      if (p < kMarker.size() || t.compare(p - kMarker.size(), kMarker.size(), kMarker) != 0) {
        split_at_marker_ = false;
        break;
      }
    }
  }
  std::string s;
  for (int b = 0; b < 256; ++b) {
    s.clear();
    s.append(kByteLevel.utf8[b].data(), kByteLevel.utf8_len[b]);
    auto it = vocab_.find(s);
    byte_level_ids_[b] = it == vocab_.end() ? -1 : it->second;
    char hex[8];
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    it = vocab_.find(std::string_view(hex));
    fallback_ids_[b] = it == vocab_.end() ? -1 : it->second;
    if (b < 128) {
      const char c = static_cast<char>(b);
      it = vocab_.find(std::string_view(&c, 1));
      ascii_ids_[b] = it == vocab_.end() ? -1 : it->second;
    }
  }
}

BpeModel::~BpeModel() = default;

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size() || !has_id_[id]) return nullptr;
  return &id_to_token_[id];
}

std::optional<int32_t> BpeModel::char_id(std::string_view ch, bool first, bool last) const {
  if (simple_chars_) {
    if (ch.size() == 1 && static_cast<unsigned char>(ch[0]) < 128) {
      const int32_t id = ascii_ids_[static_cast<unsigned char>(ch[0])];
      return id < 0 ? std::nullopt : std::optional<int32_t>(id);
    }
    return token_to_id(ch);
  }
  std::string s;
  if (!first) s += opts_.continuing_subword_prefix;
  s += ch;
  if (last) s += opts_.end_of_word_suffix;
  return token_to_id(s);
}

// Mirrors HF BPE::merge_word: vocab lookup per character, else byte fallback, else (fused) unk.
void BpeModel::initial_symbols(std::string_view piece, bool raw_bytes, std::vector<Symbol>& syms) const {
  std::optional<std::pair<int32_t, int>> unk;  // pending unknown (id, count)
  auto push = [&](int32_t id) {
    syms.push_back({id, static_cast<int32_t>(syms.size()) - 1, static_cast<int32_t>(syms.size()) + 1, 1});
  };
  auto flush_unk = [&] {
    if (unk) push(unk->first);
    unk.reset();
  };
  std::string mapped;
  size_t i = 0;
  while (i < piece.size()) {
    const size_t start = i;
    std::string_view ch;
    if (raw_bytes) {
      const auto b = static_cast<unsigned char>(piece[i++]);
      if (simple_chars_ && byte_level_ids_[b] >= 0) {
        flush_unk();
        push(byte_level_ids_[b]);
        continue;
      }
      mapped.assign(kByteLevel.utf8[b].data(), kByteLevel.utf8_len[b]);
      ch = mapped;
    } else {
      i += std::min(utf8_seq_len(static_cast<unsigned char>(piece[i])), piece.size() - i);
      ch = piece.substr(start, i - start);
    }
    const bool first = start == 0, last = i >= piece.size();
    if (auto id = char_id(ch, first, last)) {
      flush_unk();
      push(*id);
      continue;
    }
    if (opts_.byte_fallback) {
      std::string s = simple_chars_ ? std::string(ch)
                                    : (first ? "" : opts_.continuing_subword_prefix) + std::string(ch) +
                                          (last ? opts_.end_of_word_suffix : "");
      bool all = true;
      for (unsigned char b : s) all = all && fallback_ids_[b] >= 0;
      if (all) {
        for (unsigned char b : s) push(fallback_ids_[b]);
        continue;
      }
    }
    if (opts_.unk_token) {
      if (!unk_id_)
        throw Error(ErrorCode::Tokenizer, "tokenizer: unk_token \"" + *opts_.unk_token + "\" is not in the vocabulary");
      if (unk && opts_.fuse_unk) continue;
      flush_unk();
      unk = std::pair{*unk_id_, 1};
    }
  }
  flush_unk();
  if (!syms.empty()) syms.back().next = -1;
}

// Mirrors HF Word::merge_all: repeatedly apply the lowest-rank merge (leftmost on ties).
void BpeModel::merge_all(std::vector<Symbol>& syms) const {
  struct Entry {
    uint64_t key;  // rank << 32 | position
    int32_t new_id;
  };
  auto greater = [](const Entry& x, const Entry& y) { return x.key > y.key; };
  std::vector<Entry> heap;
  heap.reserve(syms.size());
  auto push = [&](size_t pos, const MergeTable::Slot* m) {
    heap.push_back({(static_cast<uint64_t>(m->rank) << 32) | pos, m->new_id});
    std::push_heap(heap.begin(), heap.end(), greater);
  };
  for (size_t k = 0; k + 1 < syms.size(); ++k) {
    if (const auto* m = merges_->find(syms[k].id, syms[k + 1].id))
      heap.push_back({(static_cast<uint64_t>(m->rank) << 32) | k, m->new_id});
  }
  std::make_heap(heap.begin(), heap.end(), greater);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), greater);
    const Entry top = heap.back();
    heap.pop_back();
    const size_t pos = static_cast<size_t>(top.key & 0xFFFFFFFFu);
    Symbol& cur = syms[pos];
    if (!cur.alive || cur.next < 0) continue;
    const size_t next_pos = static_cast<size_t>(cur.next);
    const Symbol right = syms[next_pos];
    const auto* m = merges_->find(cur.id, right.id);
    if (!m || m->new_id != top.new_id) continue;
    cur.id = top.new_id;
    cur.next = right.next;
    syms[next_pos].alive = 0;
    if (right.next >= 0) syms[static_cast<size_t>(right.next)].prev = static_cast<int32_t>(pos);
    if (cur.prev >= 0) {
      if (const auto* pm = merges_->find(syms[static_cast<size_t>(cur.prev)].id, cur.id))
        push(static_cast<size_t>(cur.prev), pm);
    }
    if (cur.next >= 0) {
      if (const auto* nm = merges_->find(cur.id, syms[static_cast<size_t>(cur.next)].id)) push(pos, nm);
    }
  }
}

void BpeModel::encode_uncached(std::string_view piece, bool raw_bytes, std::vector<int32_t>& out) const {
  if (opts_.ignore_merges) {
    if (raw_bytes) {
      std::string mapped;
      byte_level_encode(piece, mapped);
      if (auto id = token_to_id(mapped)) return out.push_back(*id);
    } else if (auto id = token_to_id(piece)) {
      return out.push_back(*id);
    }
  }
  std::vector<Symbol> syms;
  syms.reserve(piece.size());
  initial_symbols(piece, raw_bytes, syms);
  merge_all(syms);
  for (const Symbol& s : syms)
    if (s.alive) out.push_back(s.id);
}

void BpeModel::encode(std::string_view piece, bool raw_bytes, std::vector<int32_t>& out) const {
  if (piece.empty()) return;
  if (!split_at_marker_ || raw_bytes || piece.size() <= kSplitThreshold) return encode_cached(piece, raw_bytes, out);
  if (opts_.ignore_merges) {
    if (auto id = token_to_id(piece)) return out.push_back(*id);
  }
  size_t start = 0;
  for (size_t p = piece.find(kMarker, 1); p != std::string_view::npos; p = piece.find(kMarker, p + kMarker.size())) {
    if (p >= kMarker.size() && piece.compare(p - kMarker.size(), kMarker.size(), kMarker) == 0) continue;
    encode_cached(piece.substr(start, p - start), false, out);
    start = p;
  }
  encode_cached(piece.substr(start), false, out);
}

void BpeModel::encode_cached(std::string_view piece, bool raw_bytes, std::vector<int32_t>& out) const {
  if (piece.empty()) return;
  if (piece.size() > Cache::kMaxPieceBytes) return encode_uncached(piece, raw_bytes, out);
  Cache::Shard& shard = cache_->shard(piece);
  {
    std::lock_guard lock(shard.mu);
    if (auto it = shard.map.find(piece); it != shard.map.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t before = out.size();
  encode_uncached(piece, raw_bytes, out);
  std::vector<int32_t> ids(out.begin() + static_cast<std::ptrdiff_t>(before), out.end());
  std::lock_guard lock(shard.mu);
  if (shard.map.size() >= Cache::kMaxPerShard) shard.map.clear();
  shard.map.emplace(std::string(piece), std::move(ids));
}

}  // namespace inferdesk::tok
