#include "core/kv/block_pool.h"

#include <algorithm>
#include <string>

#include "core/util/error.h"

namespace inferdesk {

namespace {

// splitmix64 finaliser: a bijective 64-bit mixer with good avalanche.
uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

}  // namespace

BlockHash hash_block_tokens(BlockHash parent, std::span<const TokenId> tokens) {
  constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
  uint64_t h = mix64(parent ^ (kGolden * (tokens.size() + 1)));
  for (TokenId t : tokens) {
    h = mix64(h + kGolden + static_cast<uint64_t>(static_cast<uint32_t>(t)));
  }
  return h;
}

BlockPool::BlockPool(int32_t num_blocks, bool enable_prefix_caching) : prefix_caching_(enable_prefix_caching) {
  if (num_blocks < 1 || num_blocks > kMaxBlocks) {
    throw Error(ErrorCode::InvalidArgument, "KV cache: number of blocks must be in [1, " + std::to_string(kMaxBlocks) +
                                                "], got " + std::to_string(num_blocks));
  }
  blocks_.resize(static_cast<size_t>(num_blocks));
  sentinel_.prev = sentinel_.next = sentinel_id();
  for (BlockId i = 0; i < num_blocks; ++i) queue_push_back(i);
}

double BlockPool::usage() const { return 1.0 - static_cast<double>(num_free_) / static_cast<double>(num_blocks()); }

void BlockPool::check_id(BlockId block) const {
  if (block < 0 || block >= num_blocks()) {
    throw Error(ErrorCode::Internal, "KV cache: block id " + std::to_string(block) + " out of range [0, " +
                                         std::to_string(num_blocks()) + ")");
  }
}

void BlockPool::queue_push_back(BlockId block) {
  Block& b = blocks_[block];
  b.prev = sentinel_.prev;
  b.next = sentinel_id();
  node(sentinel_.prev).next = block;
  sentinel_.prev = block;
  ++num_free_;
}

void BlockPool::queue_remove(BlockId block) {
  Block& b = blocks_[block];
  node(b.prev).next = b.next;
  node(b.next).prev = b.prev;
  b.prev = b.next = -1;
  --num_free_;
}

void BlockPool::evict(BlockId block) {
  Block& b = blocks_[block];
  if (b.cached) {
    auto it = cached_.find(b.hash);
    if (it != cached_.end() && it->second == block) cached_.erase(it);
    b.cached = false;
    b.hash = 0;
    b.parent = {};
    b.tokens.clear();
  }
  ++b.generation;
}

std::vector<BlockId> BlockPool::allocate(int32_t n) {
  if (n < 0 || n > num_free_) {
    throw Error(ErrorCode::OutOfMemory,
                "KV cache: cannot allocate " + std::to_string(n) + " blocks, " + std::to_string(num_free_) + " free");
  }
  std::vector<BlockId> out;
  out.reserve(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    BlockId id = sentinel_.next;
    queue_remove(id);
    evict(id);
    blocks_[id].ref_count = 1;
    out.push_back(id);
  }
  return out;
}

void BlockPool::touch(std::span<const BlockId> blocks) {
  for (BlockId id : blocks) {
    check_id(id);
    Block& b = blocks_[id];
    if (b.ref_count == 0) queue_remove(id);
    ++b.ref_count;
  }
}

void BlockPool::free(std::span<const BlockId> blocks) {
  for (BlockId id : blocks) {
    check_id(id);
    Block& b = blocks_[id];
    if (b.ref_count <= 0) {
      throw Error(ErrorCode::Internal, "KV cache: block " + std::to_string(id) + " freed twice");
    }
    if (--b.ref_count == 0) queue_push_back(id);
  }
}

BlockLink BlockPool::cache_block(BlockId block, BlockHash hash, BlockLink parent, std::span<const TokenId> tokens) {
  check_id(block);
  Block& b = blocks_[block];
  if (!prefix_caching_ || b.cached) return link(block);
  if (b.ref_count <= 0) {
    throw Error(ErrorCode::Internal, "KV cache: caching block " + std::to_string(block) + " that nobody holds");
  }
  auto it = cached_.find(hash);
  if (it != cached_.end()) {
    Block& other = blocks_[it->second];
    if (is_stale(other)) {
      // The other copy's parent was evicted: it can never be hit again, so replace it.
      other.cached = false;
      other.tokens.clear();
      cached_.erase(it);
    } else {
      bool same = other.parent == parent && std::ranges::equal(other.tokens, tokens);
      // Same contents already cached: later blocks chain to that copy. Otherwise a collision.
      return same ? link(it->second) : link(block);
    }
  }
  cached_.emplace(hash, block);
  b.cached = true;
  b.hash = hash;
  b.parent = parent;
  b.tokens.assign(tokens.begin(), tokens.end());
  return link(block);
}

std::optional<BlockId> BlockPool::lookup(BlockHash hash, BlockLink parent, std::span<const TokenId> tokens) const {
  if (!prefix_caching_) return std::nullopt;
  auto it = cached_.find(hash);
  if (it == cached_.end()) return std::nullopt;
  const Block& b = blocks_[it->second];
  if (b.parent != parent || is_stale(b) || !std::ranges::equal(b.tokens, tokens)) {
    return std::nullopt;
  }
  return it->second;
}

bool BlockPool::is_stale(const Block& b) const {
  // The parent must still hold the contents the child was computed on.
  return b.parent.block >= 0 && blocks_[b.parent.block].generation != b.parent.generation;
}

int32_t BlockPool::ref_count(BlockId block) const {
  check_id(block);
  return blocks_[block].ref_count;
}

std::optional<BlockHash> BlockPool::block_hash(BlockId block) const {
  check_id(block);
  const Block& b = blocks_[block];
  if (!b.cached) return std::nullopt;
  return b.hash;
}

BlockLink BlockPool::link(BlockId block) const {
  check_id(block);
  return BlockLink{block, blocks_[block].generation};
}

std::vector<BlockId> BlockPool::free_queue() const {
  std::vector<BlockId> out;
  out.reserve(static_cast<size_t>(num_free_));
  for (BlockId id = sentinel_.next; id != sentinel_id(); id = blocks_[id].next) out.push_back(id);
  return out;
}

}  // namespace inferdesk
