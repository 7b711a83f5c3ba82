// KvCacheManager: per-sequence block tables over a BlockPool, with prefix caching.
//
// A sequence's tokens (prompt + generated) occupy consecutive slots: token position p lives in
// block table[p / block_size] at offset p % block_size, i.e. global slot
// table[p / block_size] * block_size + p % block_size.
//
// Typical use by a scheduler for a sequence entering (or re-entering after preemption):
//   PrefixHit hit = kv.find_cached_prefix(tokens);        // no refs taken yet
//   if (kv.allocate_slots(id, hit.num_tokens + chunk, &hit)) { ... computed = hit.num_tokens }
// then for every later step:
//   kv.allocate_slots(id, computed + n);                   // grow the table, or false
//   ... the model writes KV for positions [computed, computed + n) ...
//   kv.cache_full_blocks(id, tokens, computed + n);        // publish newly full blocks
// and finally kv.free(id).
//
// Not thread-safe: one owner (the engine thread) calls it.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/kv/block_pool.h"

namespace inferdesk {

using SeqId = int64_t;

// Result of a prefix-cache lookup: the cached blocks covering the first num_tokens tokens.
struct PrefixHit {
  std::vector<BlockId> blocks;
  std::vector<uint64_t> generations;  // guards against the hit going stale before allocation
  int32_t num_tokens = 0;             // blocks.size() * block_size, always < query_tokens
  int32_t query_tokens = 0;           // length of the token list that was looked up
  BlockHash last_hash = kRootBlockHash;
  BlockLink last_link;
};

struct KvCacheStats {
  int32_t blocks_total = 0;
  int32_t blocks_used = 0;          // referenced by at least one sequence
  int32_t blocks_cached = 0;        // registered in the prefix cache (used or free)
  int64_t prefix_query_tokens = 0;  // tokens of sequences admitted with a lookup
  int64_t prefix_hit_tokens = 0;    // of those, tokens served from the cache
  double usage() const { return blocks_total ? double(blocks_used) / blocks_total : 0.0; }
  double hit_rate() const {
    return prefix_query_tokens ? double(prefix_hit_tokens) / double(prefix_query_tokens) : 0.0;
  }
};

class KvCacheManager {
 public:
  static constexpr int32_t kMaxBlockSize = 1024;

  // Throws Error(InvalidArgument) for num_blocks outside [1, BlockPool::kMaxBlocks] or
  // block_size outside [1, kMaxBlockSize].
  KvCacheManager(int32_t num_blocks, int32_t block_size = 16, bool enable_prefix_caching = true);

  int32_t block_size() const { return block_size_; }
  int32_t num_blocks() const { return pool_.num_blocks(); }
  int32_t num_free_blocks() const { return pool_.num_free_blocks(); }
  // Blocks needed to hold num_tokens tokens (ceil division, 64-bit safe).
  int64_t blocks_for(int64_t num_tokens) const;

  // Longest cached prefix of `tokens` made of full blocks, never covering the last token (vLLM's
  // rule: at least one token is always computed, so the model produces logits for it). Takes no
  // references; pass the result to allocate_slots() before any other allocation.
  PrefixHit find_cached_prefix(std::span<const TokenId> tokens) const;

  // Ensures sequence `seq` has slots for token positions [0, num_tokens). For a sequence without
  // blocks, `hit` (if given) becomes the head of its table (refs taken on those blocks) and the
  // hit counts towards the prefix-cache stats. Returns false, changing nothing, when the pool
  // cannot supply the blocks. Throws Error(InvalidArgument) if num_tokens < hit->num_tokens or
  // a hit is passed for a sequence that already has blocks, Error(Internal) on a stale hit.
  bool allocate_slots(SeqId seq, int32_t num_tokens, const PrefixHit* hit = nullptr);

  // Registers the sequence's blocks that are full and computed (positions < num_computed) in the
  // prefix cache. `tokens` are the sequence's tokens (prompt then generated), at least
  // num_computed of them. No-op when prefix caching is off.
  void cache_full_blocks(SeqId seq, std::span<const TokenId> tokens, int32_t num_computed);

  // Releases the sequence's blocks, tail first (so its tail is evicted before its head). Cached
  // blocks stay reusable until evicted. Returns false if the sequence held nothing.
  bool free(SeqId seq);

  bool has_seq(SeqId seq) const { return seqs_.contains(seq); }
  // The sequence's block table (empty if unknown).
  std::span<const BlockId> block_table(SeqId seq) const;
  // Global slot of token position pos; throws Error(Internal) if pos has no slot.
  int64_t slot(SeqId seq, int32_t pos) const;
  // Slots of positions [start, start + count), appended to out.
  void append_slots(SeqId seq, int32_t start, int32_t count, std::vector<int64_t>& out) const;

  KvCacheStats stats() const;
  const BlockPool& pool() const { return pool_; }

 private:
  struct SeqState {
    std::vector<BlockId> table;
    int32_t num_cached_blocks = 0;  // table[0 .. n) are registered (or known duplicates)
    BlockHash last_hash = kRootBlockHash;
    BlockLink last_link;
  };

  int32_t block_size_;
  BlockPool pool_;
  std::unordered_map<SeqId, SeqState> seqs_;
  int64_t query_tokens_ = 0;
  int64_t hit_tokens_ = 0;
};

// Global slot of position pos in a block table (no bounds check on the table: caller's job).
inline int64_t slot_of(std::span<const BlockId> table, int32_t block_size, int32_t pos) {
  return static_cast<int64_t>(table[static_cast<size_t>(pos / block_size)]) * block_size + pos % block_size;
}

}  // namespace inferdesk
