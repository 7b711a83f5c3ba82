// BlockPool: the physical KV-cache blocks, their reference counts, the eviction-ordered free queue
// and the prefix-cache map (block hash -> block). Pure bookkeeping: no KV data lives here.
//
// Semantics (after vLLM v1's block_pool.py):
//  * Blocks are 0..n-1. A block is FREE exactly when its ref_count is 0; every free block sits in
//    the free queue. Initially the queue is 0, 1, ..., n-1.
//  * allocate(n) pops n blocks from the HEAD of the free queue. A popped block that was cached
//    loses its hash (it is evicted from the hash map) and its generation is bumped (its contents
//    are about to be overwritten).
//  * free(blocks) decrements refs in the order given; blocks reaching 0 are appended to the TAIL,
//    so blocks freed earlier are evicted first (LRU). Callers free a sequence's blocks tail first
//    (KvCacheManager does) so its tail blocks are evicted before its head blocks.
//  * A cached block with ref 0 is still in the free queue and can be touched: taken out of the
//    queue and given ref 1, without losing its contents.
//
// Collision safety: every cached block also stores its token ids and a link to its parent block
// (parent id + the parent's generation when the child was cached). lookup() returns a block only
// if hash, tokens and parent link all match, so a 64-bit hash collision can cost a cache miss but
// can never serve KV computed for other tokens or on top of another prefix.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace inferdesk {

using BlockId = int32_t;
using BlockHash = uint64_t;
using TokenId = int32_t;

// Identifies one incarnation of a block: the block id plus its allocation generation. A link
// whose generation no longer matches the block's current one refers to evicted contents.
struct BlockLink {
  BlockId block = -1;  // -1: no parent (the first block of a sequence)
  uint64_t generation = 0;
  bool operator==(const BlockLink&) const = default;
};

// Chained block hash: H(parent_hash, tokens of this block). The first block of a sequence uses
// kRootBlockHash as parent. 64-bit mixing hash; collisions are handled by BlockPool::lookup().
inline constexpr BlockHash kRootBlockHash = 0x6a09e667f3bcc908ULL;
BlockHash hash_block_tokens(BlockHash parent, std::span<const TokenId> tokens);

class BlockPool {
 public:
  // Largest pool accepted (guards against absurd sizes from configuration).
  static constexpr int32_t kMaxBlocks = 1 << 24;

  // Throws Error(InvalidArgument) unless 1 <= num_blocks <= kMaxBlocks.
  BlockPool(int32_t num_blocks, bool enable_prefix_caching);

  int32_t num_blocks() const { return static_cast<int32_t>(blocks_.size()); }
  int32_t num_free_blocks() const { return num_free_; }
  // Fraction of blocks referenced by some sequence (cached-but-free blocks count as free).
  double usage() const;
  bool prefix_caching() const { return prefix_caching_; }
  int32_t num_cached_blocks() const { return static_cast<int32_t>(cached_.size()); }

  // Pops n blocks from the head of the free queue, evicting cached ones; each returned block has
  // ref 1. Throws Error(OutOfMemory) if n > num_free_blocks() (nothing is allocated then).
  std::vector<BlockId> allocate(int32_t n);
  // Takes a reference on each block; a block with ref 0 leaves the free queue (keeps its hash).
  void touch(std::span<const BlockId> blocks);
  // Drops a reference on each block in the given order; blocks reaching 0 go to the queue tail.
  // Throws Error(Internal) on a block that is already free (double free).
  void free(std::span<const BlockId> blocks);

  // Registers `block` (full, computed, referenced) as holding `tokens` after the prefix `parent`.
  // Returns the link later blocks of the same sequence should use as their parent: the block's
  // own link, or the link of an identical block already cached under the same hash (then `block`
  // stays uncached). On a true hash collision `block` stays uncached and its own link is returned.
  BlockLink cache_block(BlockId block, BlockHash hash, BlockLink parent, std::span<const TokenId> tokens);
  // The cached block whose hash, tokens and parent link (checked against the parent's current
  // generation) all match, or nullopt.
  std::optional<BlockId> lookup(BlockHash hash, BlockLink parent, std::span<const TokenId> tokens) const;

  // Inspection (tests, stats).
  int32_t ref_count(BlockId block) const;
  std::optional<BlockHash> block_hash(BlockId block) const;
  BlockLink link(BlockId block) const;
  // Free blocks from head (evicted next) to tail.
  std::vector<BlockId> free_queue() const;

 private:
  struct Block {
    int32_t ref_count = 0;
    uint64_t generation = 0;
    bool cached = false;
    BlockHash hash = 0;
    BlockLink parent;
    std::vector<TokenId> tokens;  // contents, kept only while cached
    BlockId prev = -1;            // free-queue links; sentinel index is num_blocks()
    BlockId next = -1;
  };

  void check_id(BlockId block) const;
  void queue_push_back(BlockId block);
  void queue_remove(BlockId block);
  void evict(BlockId block);
  bool is_stale(const Block& b) const;
  Block& node(BlockId i) { return i == sentinel_id() ? sentinel_ : blocks_[i]; }
  BlockId sentinel_id() const { return num_blocks(); }

  bool prefix_caching_;
  std::vector<Block> blocks_;
  Block sentinel_;  // head = sentinel_.next, tail = sentinel_.prev
  int32_t num_free_ = 0;
  std::unordered_map<BlockHash, BlockId> cached_;
};

}  // namespace inferdesk
