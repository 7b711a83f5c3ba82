// KvCacheManager: block tables, prefix sharing with exact block ids and ref counts, the
// never-serve-the-last-token rule, chained hashes, LRU eviction, all-or-nothing allocation.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "core/kv/kv_cache_manager.h"
#include "core/util/error.h"

namespace inferdesk {
namespace {

using Ids = std::vector<BlockId>;
using Tokens = std::vector<TokenId>;

Tokens iota_tokens(int n, TokenId first) {
  Tokens t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

Tokens concat(Tokens a, const Tokens& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Ids table(const KvCacheManager& kv, SeqId s) {
  auto t = kv.block_table(s);
  return Ids(t.begin(), t.end());
}

// Admits `seq` with its cached prefix and slots for all of `tokens`, then marks them computed.
PrefixHit admit_and_compute(KvCacheManager& kv, SeqId seq, const Tokens& tokens) {
  PrefixHit hit = kv.find_cached_prefix(tokens);
  EXPECT_TRUE(kv.allocate_slots(seq, static_cast<int32_t>(tokens.size()), &hit));
  kv.cache_full_blocks(seq, tokens, static_cast<int32_t>(tokens.size()));
  return hit;
}

TEST(KvCacheManager, RejectsBadArguments) {
  EXPECT_THROW(KvCacheManager(0, 16, true), Error);
  EXPECT_THROW(KvCacheManager(4, 0, true), Error);
  EXPECT_THROW(KvCacheManager(4, KvCacheManager::kMaxBlockSize + 1, true), Error);
  KvCacheManager kv(4, 4, true);
  EXPECT_THROW(kv.allocate_slots(1, -1), Error);
  EXPECT_THROW(kv.slot(1, 0), Error);  // no such sequence
}

TEST(KvCacheManager, TwoSequencesShareThreeBlockPrefix) {
  KvCacheManager kv(16, 4, true);
  const Tokens common = iota_tokens(12, 100);
  const Tokens a = concat(common, {1, 2});
  const Tokens b = concat(common, {7, 8, 9});
  PrefixHit ha = admit_and_compute(kv, 1, a);
  EXPECT_EQ(ha.num_tokens, 0);
  EXPECT_EQ(table(kv, 1), (Ids{0, 1, 2, 3}));
  PrefixHit hb = admit_and_compute(kv, 2, b);
  EXPECT_EQ(hb.blocks, (Ids{0, 1, 2}));
  EXPECT_EQ(hb.num_tokens, 12);
  EXPECT_EQ(table(kv, 2), (Ids{0, 1, 2, 4}));
  for (BlockId blk : {0, 1, 2}) EXPECT_EQ(kv.pool().ref_count(blk), 2) << blk;
  EXPECT_EQ(kv.pool().ref_count(3), 1);
  EXPECT_EQ(kv.pool().ref_count(4), 1);
  EXPECT_FALSE(kv.pool().block_hash(3).has_value());  // partial blocks are never cached
  KvCacheStats st = kv.stats();
  EXPECT_EQ(st.blocks_used, 5);
  EXPECT_EQ(st.blocks_cached, 3);
  EXPECT_EQ(st.prefix_query_tokens, 14 + 15);
  EXPECT_EQ(st.prefix_hit_tokens, 12);
  // Freeing one sharer leaves the prefix held by the other.
  EXPECT_TRUE(kv.free(1));
  for (BlockId blk : {0, 1, 2}) EXPECT_EQ(kv.pool().ref_count(blk), 1) << blk;
  EXPECT_EQ(kv.pool().free_queue(), (Ids{5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 3}));
}

TEST(KvCacheManager, FullyCachedPromptStillComputesLastBlock) {
  KvCacheManager kv(8, 4, true);
  const Tokens p = iota_tokens(12, 0);  // exactly three blocks
  admit_and_compute(kv, 1, p);
  EXPECT_EQ(table(kv, 1), (Ids{0, 1, 2}));
  PrefixHit same = kv.find_cached_prefix(p);
  EXPECT_EQ(same.blocks, (Ids{0, 1}));  // at most 11 tokens may be served: two full blocks
  EXPECT_EQ(same.num_tokens, 8);
  ASSERT_TRUE(kv.allocate_slots(2, 12, &same));
  EXPECT_EQ(table(kv, 2), (Ids{0, 1, 3}));  // last block recomputed in a fresh block
  // One more token and the third block can be served: 12 < 13.
  PrefixHit longer = kv.find_cached_prefix(concat(p, {99}));
  EXPECT_EQ(longer.blocks, (Ids{0, 1, 2}));
  EXPECT_EQ(longer.num_tokens, 12);
  // A one-token prompt can never hit.
  EXPECT_EQ(kv.find_cached_prefix(Tokens{0}).num_tokens, 0);
}

TEST(KvCacheManager, PartialBlockPrefixIsNotShared) {
  KvCacheManager kv(8, 4, true);
  const Tokens a = iota_tokens(10, 0);  // 2 full blocks + 2 tokens
  admit_and_compute(kv, 1, a);
  EXPECT_EQ(table(kv, 1), (Ids{0, 1, 2}));
  EXPECT_FALSE(kv.pool().block_hash(2).has_value());
  const Tokens b = concat(a, {50, 51, 52, 53});  // shares 10 tokens with a
  PrefixHit hb = admit_and_compute(kv, 2, b);
  EXPECT_EQ(hb.blocks, (Ids{0, 1}));
  EXPECT_EQ(hb.num_tokens, 8);
  EXPECT_EQ(table(kv, 2), (Ids{0, 1, 3, 4}));
  EXPECT_EQ(kv.pool().ref_count(2), 1);
}

TEST(KvCacheManager, SameBlockAfterDifferentPrefixIsNotAHit) {
  KvCacheManager kv(8, 4, true);
  const Tokens x{1, 1, 1, 1}, w{2, 2, 2, 2}, y{3, 3, 3, 3};
  admit_and_compute(kv, 1, concat(concat(x, y), {9}));
  EXPECT_EQ(kv.stats().blocks_cached, 2);
  PrefixHit h = kv.find_cached_prefix(concat(concat(w, y), {9}));
  EXPECT_TRUE(h.blocks.empty());
  EXPECT_EQ(h.num_tokens, 0);
  // The original chain still hits.
  EXPECT_EQ(kv.find_cached_prefix(concat(concat(x, y), {9})).blocks, (Ids{0, 1}));
}

TEST(KvCacheManager, CacheSurvivesFinishAndIsEvictedLru) {
  KvCacheManager kv(6, 4, true);
  const Tokens a = iota_tokens(12, 0);
  admit_and_compute(kv, 1, a);
  EXPECT_EQ(table(kv, 1), (Ids{0, 1, 2}));
  const BlockHash tail_hash = *kv.pool().block_hash(2);
  kv.free(1);
  EXPECT_EQ(kv.num_free_blocks(), 6);
  EXPECT_EQ(kv.pool().free_queue(), (Ids{3, 4, 5, 2, 1, 0}));  // tail block first
  EXPECT_EQ(kv.stats().blocks_cached, 3);
  // An unrelated sequence takes 4 blocks: the 3 never-used ones, then a's tail block.
  admit_and_compute(kv, 2, iota_tokens(16, 500));
  EXPECT_EQ(table(kv, 2), (Ids{3, 4, 5, 2}));
  EXPECT_NE(kv.pool().block_hash(2), tail_hash);  // now caches sequence 2's last block
  EXPECT_TRUE(kv.pool().block_hash(1).has_value());
  EXPECT_TRUE(kv.pool().block_hash(0).has_value());
  // a's first two blocks are still served after a finished.
  PrefixHit h = kv.find_cached_prefix(concat(a, {77}));
  EXPECT_EQ(h.blocks, (Ids{0, 1}));
  EXPECT_EQ(h.num_tokens, 8);
  // 13 tokens need 2 more blocks and none is free: nothing is taken.
  EXPECT_FALSE(kv.allocate_slots(3, 13, &h));
  EXPECT_FALSE(kv.has_seq(3));
  kv.free(2);
  PrefixHit h2 = kv.find_cached_prefix(concat(a, {77}));
  ASSERT_TRUE(kv.allocate_slots(3, 13, &h2));
  // Sequence 2 freed 2, 5, 4, 3 (tail first): its tail block 2 is reused first.
  EXPECT_EQ(table(kv, 3), (Ids{0, 1, 2, 5}));
}

TEST(KvCacheManager, GeneratedTokensAreCachedToo) {
  KvCacheManager kv(8, 4, true);
  Tokens t = iota_tokens(6, 0);
  PrefixHit none = kv.find_cached_prefix(t);
  ASSERT_TRUE(kv.allocate_slots(1, 6, &none));
  kv.cache_full_blocks(1, t, 6);
  EXPECT_EQ(kv.stats().blocks_cached, 1);
  // Decode: two generated tokens fill block 1; only computed tokens count.
  t.push_back(1000);
  ASSERT_TRUE(kv.allocate_slots(1, 7));
  kv.cache_full_blocks(1, t, 7);
  t.push_back(1001);
  kv.cache_full_blocks(1, t, 7);  // token 7 sampled but not computed yet
  EXPECT_EQ(kv.stats().blocks_cached, 1);
  ASSERT_TRUE(kv.allocate_slots(1, 8));
  EXPECT_EQ(table(kv, 1), (Ids{0, 1}));
  kv.cache_full_blocks(1, t, 8);
  EXPECT_EQ(kv.stats().blocks_cached, 2);
  EXPECT_EQ(kv.find_cached_prefix(concat(t, {5})).blocks, (Ids{0, 1}));
}

TEST(KvCacheManager, FailedAllocationChangesNothing) {
  KvCacheManager kv(4, 4, true);
  const Tokens a = iota_tokens(8, 0);
  admit_and_compute(kv, 1, a);
  kv.free(1);
  EXPECT_EQ(kv.pool().free_queue(), (Ids{2, 3, 1, 0}));
  ASSERT_TRUE(kv.allocate_slots(2, 8));  // takes the two never-used blocks
  EXPECT_EQ(table(kv, 2), (Ids{2, 3}));
  // 9 tokens: 2 cached blocks (free, ref 0) + 1 new = 3 blocks, but only 2 are free.
  PrefixHit h = kv.find_cached_prefix(concat(a, {42}));
  EXPECT_EQ(h.blocks, (Ids{0, 1}));
  EXPECT_FALSE(kv.allocate_slots(3, 9, &h));
  EXPECT_FALSE(kv.has_seq(3));
  EXPECT_EQ(kv.pool().ref_count(0), 0);
  EXPECT_EQ(kv.pool().ref_count(1), 0);
  EXPECT_EQ(kv.pool().free_queue(), (Ids{1, 0}));
  EXPECT_EQ(kv.stats().prefix_hit_tokens, 0);  // the failed admission is not counted
  // Growing an existing sequence past the pool fails the same way.
  EXPECT_FALSE(kv.allocate_slots(2, 17));
  EXPECT_EQ(table(kv, 2), (Ids{2, 3}));
  // 8 tokens fit exactly (two touched blocks, no new one).
  PrefixHit h8 = kv.find_cached_prefix(concat(a, {42}));
  ASSERT_TRUE(kv.allocate_slots(3, 8, &h8));
  EXPECT_EQ(table(kv, 3), (Ids{0, 1}));
  EXPECT_EQ(kv.num_free_blocks(), 0);
}

TEST(KvCacheManager, DuplicateBlocksChainThroughTheCachedCopy) {
  KvCacheManager kv(10, 4, true);
  const Tokens p = iota_tokens(13, 0);
  PrefixHit h1 = kv.find_cached_prefix(p), h2 = kv.find_cached_prefix(p);
  ASSERT_TRUE(kv.allocate_slots(1, 13, &h1));
  ASSERT_TRUE(kv.allocate_slots(2, 13, &h2));  // admitted in the same step: no hit yet
  EXPECT_EQ(table(kv, 1), (Ids{0, 1, 2, 3}));
  EXPECT_EQ(table(kv, 2), (Ids{4, 5, 6, 7}));
  kv.cache_full_blocks(1, p, 13);
  kv.cache_full_blocks(2, p, 13);
  EXPECT_EQ(kv.stats().blocks_cached, 3);  // 4, 5, 6 are duplicates of 0, 1, 2
  EXPECT_FALSE(kv.pool().block_hash(4).has_value());
  // Sequence 2 decodes three more tokens, filling its block 7 on top of a prefix equal to 0-2.
  Tokens t2 = concat(p, {90, 91, 92});
  ASSERT_TRUE(kv.allocate_slots(2, 16));
  kv.cache_full_blocks(2, t2, 16);
  EXPECT_TRUE(kv.pool().block_hash(7).has_value());
  PrefixHit h3 = kv.find_cached_prefix(concat(t2, {1}));
  EXPECT_EQ(h3.blocks, (Ids{0, 1, 2, 7}));
  EXPECT_EQ(h3.num_tokens, 16);
}

TEST(KvCacheManager, StaleHitIsRejected) {
  KvCacheManager kv(3, 4, true);
  const Tokens a = iota_tokens(8, 0);
  admit_and_compute(kv, 1, a);
  kv.free(1);
  PrefixHit h = kv.find_cached_prefix(concat(a, {1}));
  ASSERT_EQ(h.blocks, (Ids{0, 1}));
  ASSERT_TRUE(kv.allocate_slots(2, 12));  // evicts the cached blocks
  try {
    kv.allocate_slots(3, 9, &h);
    FAIL() << "stale hit accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Internal);
  }
  EXPECT_FALSE(kv.has_seq(3));
}

TEST(KvCacheManager, SlotsFollowTheBlockTable) {
  KvCacheManager kv(8, 4, true);
  ASSERT_TRUE(kv.allocate_slots(1, 4));  // block 0
  ASSERT_TRUE(kv.allocate_slots(2, 4));  // block 1
  ASSERT_TRUE(kv.allocate_slots(1, 6));  // block 2
  EXPECT_EQ(table(kv, 1), (Ids{0, 2}));
  EXPECT_EQ(kv.slot(1, 3), 3);
  EXPECT_EQ(kv.slot(1, 4), 8);
  EXPECT_EQ(kv.slot(1, 7), 11);  // slot exists (block allocated) even if not yet used
  EXPECT_THROW(kv.slot(1, 8), Error);
  std::vector<int64_t> slots;
  kv.append_slots(1, 2, 4, slots);
  EXPECT_EQ(slots, (std::vector<int64_t>{2, 3, 8, 9}));
  EXPECT_THROW(kv.append_slots(1, 6, 3, slots), Error);
}

TEST(KvCacheManager, DefaultBlockSizeIs16) {
  KvCacheManager kv(8);
  EXPECT_EQ(kv.block_size(), 16);
  const Tokens a = iota_tokens(40, 0);
  admit_and_compute(kv, 1, a);
  EXPECT_EQ(table(kv, 1), (Ids{0, 1, 2}));
  PrefixHit h = admit_and_compute(kv, 2, concat(iota_tokens(32, 0), {5, 6}));
  EXPECT_EQ(h.num_tokens, 32);
  EXPECT_EQ(table(kv, 2), (Ids{0, 1, 3}));
}

TEST(KvCacheManager, DisabledPrefixCachingNeverHits) {
  KvCacheManager kv(8, 4, false);
  const Tokens a = iota_tokens(9, 0);
  admit_and_compute(kv, 1, a);
  PrefixHit h = admit_and_compute(kv, 2, a);
  EXPECT_EQ(h.num_tokens, 0);
  EXPECT_EQ(table(kv, 2), (Ids{3, 4, 5}));
  EXPECT_EQ(kv.stats().blocks_cached, 0);
  EXPECT_EQ(kv.stats().prefix_query_tokens, 18);
}

}  // namespace
}  // namespace inferdesk
