// paged_attention_prefill (cuda/kernels/attention_prefill.cu) against the CPU backend's attention:
// mixed batches (decode rows, chunked prefill over earlier cached blocks, whole prompts, padding
// sequences), every head_dim, GQA ratios, block sizes, sliding windows, misaligned strides and
// caches (scalar paths), on shuffled block tables whose unused slots are NaN.
#include <gtest/gtest.h>

#include <tuple>

#include "core/util/error.h"
#include "cuda/kernels/attention.h"
#include "tests/gpu/attention/attention_harness.h"

namespace inferdesk::gputest::attn {
namespace {

void run_prefill(const AttnCase& c) { run_and_check(c, Kernel::Prefill); }

// A batch of everything a mixed step can hold.
std::vector<SeqSpec> mixed_seqs() {
  return {
      {1, 1},                           // first token of a prompt
      {15, 15},                         // whole prompts of odd lengths
      {17, 17},   {1, 100},             // decode rows
      {37, 300},                        // chunked prefill: 263 cached tokens before this chunk
      {3, 0},                           // padding sequence with rows: zeros
      {100, 100}, {0, 0},               // empty padding sequence: no rows
      {1, 1000},  {64, 1037}, {0, 50},  // a sequence with no rows this step
      {2, 2},
  };
}

class PrefillShapes : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(PrefillShapes, MixedBatchMatchesCpu) {
  INFERDESK_REQUIRE_GPU();
  const auto [head_dim, group] = GetParam();
  const int block_sizes[] = {8, 16, 32, 64};
  run_prefill(make_case(mixed_seqs(), 2 * group, 2, head_dim, block_sizes[(head_dim / 32 + group) % 4],
                        100 + head_dim * 10 + group));
}

INSTANTIATE_TEST_SUITE_P(HeadDimGroup, PrefillShapes,
                         ::testing::Combine(::testing::Values(32, 64, 128, 256), ::testing::Values(1, 2, 3, 4, 7, 8)),
                         [](const auto& info) {
                           return param_name({{"D", std::get<0>(info.param)}, {"G", std::get<1>(info.param)}});
                         });

TEST(GpuPagedPrefill, EveryBlockSize) {
  INFERDESK_REQUIRE_GPU();
  for (int bs : {8, 16, 32, 64, 128})
    run_prefill(make_case({{45, 45}, {20, 133}, {1, 64}, {65, 65}, {1, 129}}, 8, 2, 128, bs, 7 + bs));
}

TEST(GpuPagedPrefill, SlidingWindow) {
  INFERDESK_REQUIRE_GPU();
  for (int window : {1, 5, 16, 63, 100, 4096})
    for (int head_dim : {64, 128}) {
      AttnCase c = make_case({{200, 200}, {50, 500}, {1, 333}, {7, 7}, {130, 1030}}, 8, 2, head_dim, 16,
                             300 + window + head_dim);
      c.sliding_window = window;
      run_prefill(c);
    }
}

TEST(GpuPagedPrefill, LongPromptLlama8BShape) {
  INFERDESK_REQUIRE_GPU();
  run_prefill(make_case({{1100, 1100}}, 32, 8, 128, 16, 42));
}

TEST(GpuPagedPrefill, DecodeRowsOnly) {
  INFERDESK_REQUIRE_GPU();
  run_prefill(make_case({{1, 1}, {1, 15}, {1, 17}, {1, 100}, {1, 0}, {1, 1000}, {1, 1500}}, 32, 8, 64, 16, 9));
}

TEST(GpuPagedPrefill, MisalignedStridesAndCacheUseScalarPaths) {
  INFERDESK_REQUIRE_GPU();
  for (int head_dim : {32, 128, 256}) {
    AttnCase c = make_case({{33, 33}, {1, 70}, {20, 90}, {2, 0}}, 6, 3, head_dim, 16, 500 + head_dim);
    c.q_pad = 3;  // odd strides: rows not 16-byte (q) / 4-byte (out) aligned
    c.out_pad = 5;
    c.q_offset = 1;
    c.cache_offset = 3;  // cache not 16-byte aligned
    c.row_gap = 2;
    run_prefill(c);
  }
}

TEST(GpuPagedPrefill, PaddedStridesAndRowGapsStayUntouched) {
  INFERDESK_REQUIRE_GPU();
  AttnCase c = make_case({{9, 9}, {1, 40}, {4, 0}, {30, 60}}, 4, 4, 64, 16, 77);
  c.q_pad = 8;  // aligned padding: vector paths, the pad columns must be neither read nor written
  c.out_pad = 8;
  c.row_gap = 3;
  run_prefill(c);
}

TEST(GpuPagedPrefill, AllPaddingAndEmptyLaunches) {
  INFERDESK_REQUIRE_GPU();
  run_prefill(make_case({{2, 0}, {1, 0}, {0, 0}}, 8, 2, 128));
  // Nothing to do: no launch, no error.
  cuda::PagedAttentionArgs a;
  a.num_heads = 8;
  a.num_kv_heads = 2;
  a.head_dim = 128;
  a.num_seqs = 0;
  EXPECT_NO_THROW(cuda::paged_attention_prefill(a, test_launch()));
}

// Both launchers refuse what they do not implement with Error(Internal), before launching.
TEST(GpuPagedAttention, UnsupportedConfigurationsThrow) {
  INFERDESK_REQUIRE_GPU();
  cuda::PagedAttentionArgs a;
  a.num_heads = 8;
  a.num_kv_heads = 2;
  a.num_seqs = 1;
  a.max_query_len = 1;
  auto both_throw = [&](const char* what) {
    EXPECT_THROW(cuda::paged_attention_prefill(a, test_launch()), Error) << what;
    EXPECT_THROW(cuda::paged_attention_decode(a, test_launch()), Error) << what;
  };
  a.head_dim = 80;
  both_throw("head_dim 80");
  a.head_dim = 64;
  a.num_kv_heads = 3;
  both_throw("8 heads over 3 kv heads");
  a.num_kv_heads = 2;
  a.block_size = 24;
  both_throw("block_size 24");
  a.block_size = 16;
  a.num_splits = 4;  // decode: several splits but no workspace
  EXPECT_THROW(cuda::paged_attention_decode(a, test_launch()), Error);
  a.num_splits = 0;
  EXPECT_THROW(cuda::paged_attention_decode(a, test_launch()), Error);
}

}  // namespace
}  // namespace inferdesk::gputest::attn
