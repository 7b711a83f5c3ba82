#include "core/kv/kv_cache_manager.h"

#include <algorithm>
#include <string>

#include "core/util/error.h"

namespace inferdesk {

namespace {

int32_t checked_block_size(int32_t block_size) {
  if (block_size < 1 || block_size > KvCacheManager::kMaxBlockSize) {
    throw Error(ErrorCode::InvalidArgument, "KV cache: block size must be in [1, " +
                                                std::to_string(KvCacheManager::kMaxBlockSize) + "], got " +
                                                std::to_string(block_size));
  }
  return block_size;
}

}  // namespace

KvCacheManager::KvCacheManager(int32_t num_blocks, int32_t block_size, bool enable_prefix_caching)
    : block_size_(checked_block_size(block_size)), pool_(num_blocks, enable_prefix_caching) {}

int64_t KvCacheManager::blocks_for(int64_t num_tokens) const {
  if (num_tokens <= 0) return 0;
  return (num_tokens + block_size_ - 1) / block_size_;
}

PrefixHit KvCacheManager::find_cached_prefix(std::span<const TokenId> tokens) const {
  PrefixHit hit;
  hit.query_tokens = static_cast<int32_t>(std::min<size_t>(tokens.size(), INT32_MAX));
  if (!pool_.prefix_caching() || tokens.empty()) return hit;
  // Never serve the last token: at most (n - 1) tokens, rounded down to full blocks.
  const size_t max_blocks = (tokens.size() - 1) / static_cast<size_t>(block_size_);
  for (size_t i = 0; i < max_blocks; ++i) {
    auto slice = tokens.subspan(i * static_cast<size_t>(block_size_), static_cast<size_t>(block_size_));
    BlockHash h = hash_block_tokens(hit.last_hash, slice);
    std::optional<BlockId> b = pool_.lookup(h, hit.last_link, slice);
    if (!b) break;
    hit.blocks.push_back(*b);
    hit.last_link = pool_.link(*b);
    hit.generations.push_back(hit.last_link.generation);
    hit.last_hash = h;
  }
  hit.num_tokens = static_cast<int32_t>(hit.blocks.size()) * block_size_;
  return hit;
}

bool KvCacheManager::allocate_slots(SeqId seq, int32_t num_tokens, const PrefixHit* hit) {
  auto it = seqs_.find(seq);
  const bool is_new = it == seqs_.end();
  if (num_tokens < 0) {
    throw Error(ErrorCode::InvalidArgument, "KV cache: negative token count " + std::to_string(num_tokens));
  }
  if (hit && !is_new) {
    throw Error(ErrorCode::InvalidArgument,
                "KV cache: prefix hit given for sequence " + std::to_string(seq) + " that already has blocks");
  }
  const size_t hit_blocks = hit ? hit->blocks.size() : 0;
  if (hit) {
    if (num_tokens < hit->num_tokens) {
      throw Error(ErrorCode::InvalidArgument,
                  "KV cache: allocation of " + std::to_string(num_tokens) + " tokens is shorter than its prefix hit");
    }
    if (hit->generations.size() != hit_blocks || hit->num_tokens != static_cast<int32_t>(hit_blocks) * block_size_) {
      throw Error(ErrorCode::InvalidArgument, "KV cache: malformed prefix hit");
    }
    for (size_t i = 0; i < hit_blocks; ++i) {
      BlockLink l = pool_.link(hit->blocks[i]);
      if (l.generation != hit->generations[i] || !pool_.block_hash(l.block)) {
        throw Error(ErrorCode::Internal,
                    "KV cache: stale prefix hit (block " + std::to_string(l.block) + " was evicted)");
      }
    }
  }
  const int64_t have = is_new ? static_cast<int64_t>(hit_blocks) : static_cast<int64_t>(it->second.table.size());
  const int64_t need = std::max<int64_t>(0, blocks_for(num_tokens) - have);
  int64_t hit_free = 0;
  for (size_t i = 0; i < hit_blocks; ++i) hit_free += pool_.ref_count(hit->blocks[i]) == 0;
  if (need + hit_free > pool_.num_free_blocks()) return false;

  if (is_new) {
    it = seqs_.emplace(seq, SeqState{}).first;
    if (hit) {
      pool_.touch(hit->blocks);
      it->second.table = hit->blocks;
      it->second.num_cached_blocks = static_cast<int32_t>(hit_blocks);
      it->second.last_hash = hit->last_hash;
      it->second.last_link = hit->last_link;
      query_tokens_ += hit->query_tokens;
      hit_tokens_ += hit->num_tokens;
    }
  }
  std::vector<BlockId> fresh = pool_.allocate(static_cast<int32_t>(need));
  it->second.table.insert(it->second.table.end(), fresh.begin(), fresh.end());
  return true;
}

void KvCacheManager::cache_full_blocks(SeqId seq, std::span<const TokenId> tokens, int32_t num_computed) {
  if (!pool_.prefix_caching()) return;
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) {
    throw Error(ErrorCode::Internal, "KV cache: caching blocks of unknown sequence " + std::to_string(seq));
  }
  if (num_computed < 0 || static_cast<size_t>(num_computed) > tokens.size()) {
    throw Error(ErrorCode::InvalidArgument, "KV cache: " + std::to_string(num_computed) + " computed tokens but only " +
                                                std::to_string(tokens.size()) + " tokens given");
  }
  SeqState& s = it->second;
  const int32_t full = num_computed / block_size_;
  if (static_cast<size_t>(full) > s.table.size()) {
    throw Error(ErrorCode::Internal,
                "KV cache: sequence " + std::to_string(seq) + " computed tokens beyond its block table");
  }
  for (int32_t i = s.num_cached_blocks; i < full; ++i) {
    auto slice = tokens.subspan(static_cast<size_t>(i) * static_cast<size_t>(block_size_),
                                static_cast<size_t>(block_size_));
    BlockHash h = hash_block_tokens(s.last_hash, slice);
    s.last_link = pool_.cache_block(s.table[static_cast<size_t>(i)], h, s.last_link, slice);
    s.last_hash = h;
  }
  s.num_cached_blocks = std::max(s.num_cached_blocks, full);
}

bool KvCacheManager::free(SeqId seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return false;
  std::vector<BlockId> reversed(it->second.table.rbegin(), it->second.table.rend());
  seqs_.erase(it);
  pool_.free(reversed);
  return !reversed.empty();
}

std::span<const BlockId> KvCacheManager::block_table(SeqId seq) const {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return {};
  return it->second.table;
}

int64_t KvCacheManager::slot(SeqId seq, int32_t pos) const {
  std::span<const BlockId> table = block_table(seq);
  if (pos < 0 || static_cast<size_t>(pos / block_size_) >= table.size()) {
    throw Error(ErrorCode::Internal,
                "KV cache: position " + std::to_string(pos) + " of sequence " + std::to_string(seq) + " has no slot");
  }
  return slot_of(table, block_size_, pos);
}

void KvCacheManager::append_slots(SeqId seq, int32_t start, int32_t count, std::vector<int64_t>& out) const {
  if (count <= 0) return;
  slot(seq, start);
  slot(seq, start + count - 1);  // both ends checked: the range is covered
  std::span<const BlockId> table = block_table(seq);
  for (int32_t p = start; p < start + count; ++p) out.push_back(slot_of(table, block_size_, p));
}

KvCacheStats KvCacheManager::stats() const {
  KvCacheStats st;
  st.blocks_total = pool_.num_blocks();
  st.blocks_used = pool_.num_blocks() - pool_.num_free_blocks();
  st.blocks_cached = pool_.num_cached_blocks();
  st.prefix_query_tokens = query_tokens_;
  st.prefix_hit_tokens = hit_tokens_;
  return st;
}

}  // namespace inferdesk
