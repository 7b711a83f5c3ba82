// BlockPool: allocation order, LRU free queue, eviction of cached blocks, touch, collision safety.
#include <gtest/gtest.h>

#include <vector>

#include "core/kv/block_pool.h"
#include "core/util/error.h"

namespace inferdesk {
namespace {

using Ids = std::vector<BlockId>;
using Tokens = std::vector<TokenId>;

TEST(BlockPool, RejectsBadSize) {
  EXPECT_THROW(BlockPool(0, true), Error);
  EXPECT_THROW(BlockPool(-3, false), Error);
  EXPECT_THROW(BlockPool(BlockPool::kMaxBlocks + 1, true), Error);
  try {
    BlockPool p(0, true);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
  }
}

TEST(BlockPool, AllocatesFromHeadInIdOrder) {
  BlockPool pool(8, true);
  EXPECT_EQ(pool.free_queue(), (Ids{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(pool.allocate(3), (Ids{0, 1, 2}));
  EXPECT_EQ(pool.allocate(2), (Ids{3, 4}));
  EXPECT_EQ(pool.num_free_blocks(), 3);
  EXPECT_DOUBLE_EQ(pool.usage(), 5.0 / 8.0);
  for (BlockId b = 0; b < 5; ++b) EXPECT_EQ(pool.ref_count(b), 1) << b;
  for (BlockId b = 5; b < 8; ++b) EXPECT_EQ(pool.ref_count(b), 0) << b;
  EXPECT_EQ(pool.free_queue(), (Ids{5, 6, 7}));
}

TEST(BlockPool, FreedBlocksGoToTailInGivenOrder) {
  BlockPool pool(8, true);
  Ids a = pool.allocate(4);    // 0 1 2 3
  Ids b = pool.allocate(2);    // 4 5
  pool.free(Ids{3, 2, 1, 0});  // a sequence frees tail first
  EXPECT_EQ(pool.free_queue(), (Ids{6, 7, 3, 2, 1, 0}));
  pool.free(Ids{5, 4});
  EXPECT_EQ(pool.free_queue(), (Ids{6, 7, 3, 2, 1, 0, 5, 4}));
  // LRU: never-used blocks first, then in the order they were freed.
  EXPECT_EQ(pool.allocate(5), (Ids{6, 7, 3, 2, 1}));
  EXPECT_EQ(pool.free_queue(), (Ids{0, 5, 4}));
}

TEST(BlockPool, SharedBlockFreedOnlyAtRefZero) {
  BlockPool pool(4, true);
  Ids a = pool.allocate(2);  // 0 1
  pool.touch(Ids{1});
  EXPECT_EQ(pool.ref_count(1), 2);
  pool.free(Ids{1});
  EXPECT_EQ(pool.ref_count(1), 1);
  EXPECT_EQ(pool.free_queue(), (Ids{2, 3}));
  pool.free(Ids{1, 0});
  EXPECT_EQ(pool.free_queue(), (Ids{2, 3, 1, 0}));
  EXPECT_EQ(pool.num_free_blocks(), 4);
}

TEST(BlockPool, DoubleFreeAndOverAllocationAreErrors) {
  BlockPool pool(3, false);
  Ids a = pool.allocate(1);
  pool.free(a);
  try {
    pool.free(a);
    FAIL() << "double free accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Internal);
  }
  try {
    pool.allocate(4);
    FAIL() << "over-allocation accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::OutOfMemory);
  }
  EXPECT_EQ(pool.num_free_blocks(), 3);  // the failed call allocated nothing
  EXPECT_THROW(pool.ref_count(3), Error);
}

TEST(BlockPool, EvictingCachedBlockRemovesItsHash) {
  BlockPool pool(4, true);
  Ids a = pool.allocate(2);  // 0 1
  const Tokens t0{1, 2, 3, 4};
  const BlockHash h0 = hash_block_tokens(kRootBlockHash, t0);
  BlockLink l0 = pool.cache_block(0, h0, {}, t0);
  EXPECT_EQ(l0, pool.link(0));
  EXPECT_EQ(pool.lookup(h0, {}, t0), 0);
  pool.free(Ids{1, 0});
  // Free but still cached: the hash survives until the block is reused.
  EXPECT_EQ(pool.block_hash(0), h0);
  EXPECT_EQ(pool.lookup(h0, {}, t0), 0);
  EXPECT_EQ(pool.num_cached_blocks(), 1);
  EXPECT_EQ(pool.free_queue(), (Ids{2, 3, 1, 0}));
  EXPECT_EQ(pool.allocate(3), (Ids{2, 3, 1}));
  EXPECT_EQ(pool.block_hash(0), h0);  // not yet
  EXPECT_EQ(pool.allocate(1), (Ids{0}));
  EXPECT_FALSE(pool.block_hash(0).has_value());
  EXPECT_FALSE(pool.lookup(h0, {}, t0).has_value());
  EXPECT_EQ(pool.num_cached_blocks(), 0);
}

TEST(BlockPool, TouchTakesCachedBlockOutOfFreeQueue) {
  BlockPool pool(4, true);
  Ids a = pool.allocate(1);  // 0
  const Tokens t{7, 7};
  const BlockHash h = hash_block_tokens(kRootBlockHash, t);
  pool.cache_block(0, h, {}, t);
  pool.free(a);
  EXPECT_EQ(pool.free_queue(), (Ids{1, 2, 3, 0}));
  pool.touch(Ids{0});
  EXPECT_EQ(pool.ref_count(0), 1);
  EXPECT_EQ(pool.free_queue(), (Ids{1, 2, 3}));
  EXPECT_EQ(pool.num_free_blocks(), 3);
  EXPECT_EQ(pool.block_hash(0), h);  // contents kept
  EXPECT_EQ(pool.allocate(3), (Ids{1, 2, 3}));
  EXPECT_EQ(pool.lookup(h, {}, t), 0);
}

TEST(BlockPool, HashCollisionNeverServesOtherTokens) {
  BlockPool pool(4, true);
  Ids a = pool.allocate(3);
  const Tokens ta{1, 2, 3, 4}, tb{5, 6, 7, 8};
  const BlockHash forced = 42;  // pretend both blocks hash to the same value
  EXPECT_EQ(pool.cache_block(0, forced, {}, ta), pool.link(0));
  EXPECT_FALSE(pool.lookup(forced, {}, tb).has_value());
  EXPECT_EQ(pool.lookup(forced, {}, ta), 0);
  // The colliding block is not cached and chains on its own link.
  EXPECT_EQ(pool.cache_block(1, forced, {}, tb), pool.link(1));
  EXPECT_FALSE(pool.block_hash(1).has_value());
  // An identical copy is not cached twice; later blocks chain on the cached copy.
  EXPECT_EQ(pool.cache_block(2, forced, {}, ta), pool.link(0));
  EXPECT_FALSE(pool.block_hash(2).has_value());
  EXPECT_EQ(pool.num_cached_blocks(), 1);
}

TEST(BlockPool, SameTokensUnderAnotherParentAreNotServed) {
  BlockPool pool(4, true);
  Ids a = pool.allocate(3);
  const Tokens t{9, 9};
  const BlockHash forced = 7;  // a colliding hash: only the parent link tells them apart
  pool.cache_block(2, forced, pool.link(0), t);
  EXPECT_EQ(pool.lookup(forced, pool.link(0), t), 2);
  EXPECT_FALSE(pool.lookup(forced, pool.link(1), t).has_value());
  EXPECT_FALSE(pool.lookup(forced, BlockLink{}, t).has_value());
}

TEST(BlockPool, ChildOfEvictedParentIsNotServed) {
  BlockPool pool(3, true);
  Ids a = pool.allocate(2);  // 0 1
  const Tokens t0{1, 2}, t1{3, 4};
  const BlockHash h0 = hash_block_tokens(kRootBlockHash, t0);
  const BlockHash h1 = hash_block_tokens(h0, t1);
  BlockLink l0 = pool.cache_block(0, h0, {}, t0);
  pool.cache_block(1, h1, l0, t1);
  EXPECT_EQ(pool.lookup(h1, l0, t1), 1);
  pool.free(Ids{0});  // head freed first (unusual order): it is evicted before its child
  pool.free(Ids{1});
  EXPECT_EQ(pool.allocate(2), (Ids{2, 0}));
  // Block 0 now holds other contents; the child is unreachable even through the old link.
  EXPECT_FALSE(pool.lookup(h1, l0, t1).has_value());
  EXPECT_EQ(pool.block_hash(1), h1);  // still registered, evicted in turn when reused
  // A fresh copy of the child (on a fresh parent) replaces the orphaned entry.
  BlockLink l0b = pool.cache_block(0, h0, {}, t0);
  EXPECT_EQ(pool.cache_block(2, h1, l0b, t1), pool.link(2));
  EXPECT_EQ(pool.lookup(h1, l0b, t1), 2);
  EXPECT_FALSE(pool.block_hash(1).has_value());
}

TEST(BlockPool, DisabledCachingCachesNothing) {
  BlockPool pool(2, false);
  Ids a = pool.allocate(1);
  const Tokens t{1};
  const BlockHash h = hash_block_tokens(kRootBlockHash, t);
  pool.cache_block(0, h, {}, t);
  EXPECT_FALSE(pool.block_hash(0).has_value());
  EXPECT_FALSE(pool.lookup(h, {}, t).has_value());
}

TEST(BlockHash, ChainedAndContentSensitive) {
  const Tokens x{1, 2, 3, 4}, y{5, 6, 7, 8};
  const BlockHash hx = hash_block_tokens(kRootBlockHash, x);
  EXPECT_EQ(hx, hash_block_tokens(kRootBlockHash, x));
  EXPECT_NE(hx, hash_block_tokens(kRootBlockHash, y));
  // Same block contents after different prefixes hash differently.
  EXPECT_NE(hash_block_tokens(hx, y), hash_block_tokens(kRootBlockHash, y));
  EXPECT_NE(hash_block_tokens(kRootBlockHash, Tokens{1, 2}), hash_block_tokens(kRootBlockHash, Tokens{2, 1}));
  EXPECT_NE(hash_block_tokens(kRootBlockHash, Tokens{0}), hash_block_tokens(kRootBlockHash, Tokens{0, 0}));
}

}  // namespace
}  // namespace inferdesk
