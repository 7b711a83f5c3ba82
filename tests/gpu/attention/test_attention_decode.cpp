// paged_attention_decode (cuda/kernels/attention_decode.cu, attention_decode_mma.cu) against the
// CPU backend's attention, with every K/V load (run_and_check: Registers, Pipelined, Mma, Auto
// with either large_grid_load): every head_dim (Mma serves 64 and 128, the others fall
// back), GQA ratios (incl. groups that are not a power of two or exceed 8 or 16 heads), split
// counts from 1 to more splits than blocks, block sizes, sliding windows, padding sequences,
// contexts shorter than one 16-key tile, misaligned caches and query/output rows, and a captured
// CUDA graph replayed over new context lengths.
#include <gtest/gtest.h>

#include <tuple>

#include "core/util/error.h"
#include "cuda/kernels/attention.h"
#include "tests/gpu/attention/attention_harness.h"

namespace inferdesk::gputest::attn {
namespace {

void run_decode(const AttnCase& c, int32_t num_splits, int32_t min_keys = cuda::kDecodeMinKeysPerSplit) {
  run_and_check(c, Kernel::Decode, num_splits, min_keys);
}

// Decode rows at odd context lengths, a padding row and a sequence without a row.
std::vector<SeqSpec> decode_seqs() {
  return {{1, 1}, {1, 15}, {1, 17}, {1, 100}, {1, 0}, {1, 1000}, {1, 64}, {0, 0}, {1, 1500}, {1, 257}};
}

class DecodeShapes : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(DecodeShapes, MatchesCpu) {
  INFERDESK_REQUIRE_GPU();
  const auto [head_dim, group, splits] = GetParam();
  const int block_sizes[] = {16, 8, 32, 64};
  // With 200 splits every key may start a split (min keys 1): more splits than blocks, so many
  // splits of a sequence are empty yet still take part in the arrival count. Otherwise a context
  // uses ceil(keys / kDecodeMinKeysPerSplit) of the splits at most.
  run_decode(make_case(decode_seqs(), 2 * group, 2, head_dim, block_sizes[(head_dim / 32 + group + splits) % 4],
                       1000 + head_dim * 100 + group * 10 + splits),
             splits, splits == 200 ? 1 : cuda::kDecodeMinKeysPerSplit);
}

INSTANTIATE_TEST_SUITE_P(HeadDimGroupSplits, DecodeShapes,
                         ::testing::Combine(::testing::Values(32, 64, 128, 256),
                                            ::testing::Values(1, 2, 3, 4, 5, 8, 12), ::testing::Values(1, 3, 16, 200)),
                         [](const auto& info) {
                           return param_name({{"D", std::get<0>(info.param)},
                                              {"G", std::get<1>(info.param)},
                                              {"S", std::get<2>(info.param)}});
                         });

TEST(GpuPagedDecode, EveryBlockSize) {
  INFERDESK_REQUIRE_GPU();
  for (int bs : {8, 16, 32, 64, 128})
    for (int splits : {1, 4})
      run_decode(make_case({{1, 45}, {1, 133}, {1, 64}, {1, 65}, {1, 1}, {1, 129}}, 32, 8, 128, bs, 70 + bs), splits);
}

TEST(GpuPagedDecode, SlidingWindow) {
  INFERDESK_REQUIRE_GPU();
  for (int window : {1, 7, 16, 100, 1000, 5000})
    for (int splits : {1, 4, 33}) {
      AttnCase c = make_case({{1, 1}, {1, 17}, {1, 333}, {1, 1500}, {1, 0}, {1, 1024}}, 8, 2, 64, 16,
                             900 + window + splits);
      c.sliding_window = window;
      run_decode(c, splits);
    }
}

TEST(GpuPagedDecode, LongContextManySplits) {
  INFERDESK_REQUIRE_GPU();
  for (int splits : {1, 64}) run_decode(make_case({{1, 9000}, {1, 4097}}, 32, 8, 128, 16, 5 + splits), splits);
}

// Auto on both sides of its grid-size choice: 70 sequences x 2 kv heads (140 blocks: the
// shared-memory pipeline with the whole group per block) and 40 x 2 (80 blocks: registers, the
// group served 2 or 1 heads per block), for groups of 4 and 8 query heads, with and without splits.
TEST(GpuPagedDecode, AutoOnManyAndFewBlocks) {
  INFERDESK_REQUIRE_GPU();
  for (int seqs : {70, 40})
    for (int group : {4, 8}) {
      std::vector<SeqSpec> specs;
      for (int i = 0; i < seqs; ++i) specs.push_back({1, 1 + (i * 37) % 300});
      for (int splits : {1, 3}) run_decode(make_case(specs, 2 * group, 2, 128, 16, 77 + seqs + group + splits), splits);
    }
}

TEST(GpuPagedDecode, MisalignedCacheAndStrides) {
  INFERDESK_REQUIRE_GPU();
  for (int head_dim : {32, 64, 256})
    for (int splits : {1, 5}) {
      AttnCase c = make_case({{1, 33}, {1, 70}, {1, 0}, {1, 190}}, 6, 2, head_dim, 16, 600 + head_dim + splits);
      c.q_pad = 3;
      c.out_pad = 5;
      c.q_offset = 1;
      c.cache_offset = 3;  // scalar K/V loads
      c.row_gap = 2;
      run_decode(c, splits);
    }
}

// Groups of 16 heads and more: the Mma kernel's widest blocks (two mma n-blocks of 8 heads) and
// groups cut into head chunks of 16 (and of 4, 2, 1 under a smaller max_heads_per_block), the last
// chunk partly filled.
TEST(GpuPagedDecode, GroupsBeyondOneMmaTile) {
  INFERDESK_REQUIRE_GPU();
  for (int head_dim : {64, 128})
    for (int group : {16, 17, 20})
      for (int splits : {1, 4})
        run_decode(make_case({{1, 5}, {1, 130}, {1, 0}, {1, 299}}, 2 * group, 2, head_dim, 16,
                             400 + head_dim + group * 3 + splits),
                   splits);
}

// Query and output rows at odd offsets and strides over an aligned cache (which the Mma kernel
// serves: q read as single bf16, out written per element).
TEST(GpuPagedDecode, MisalignedQueryAndOutputRows) {
  INFERDESK_REQUIRE_GPU();
  for (int head_dim : {64, 128})
    for (int splits : {1, 5}) {
      AttnCase c = make_case({{1, 33}, {1, 70}, {1, 0}, {1, 190}, {1, 3}}, 8, 2, head_dim, 16, 650 + head_dim + splits);
      c.q_pad = 3;
      c.out_pad = 5;
      c.q_offset = 1;
      c.row_gap = 2;
      run_decode(c, splits);
    }
}

TEST(GpuPagedDecode, AgreesWithPrefillKernelOnDecodeRows) {
  INFERDESK_REQUIRE_GPU();
  const AttnData d = make_data(make_case(decode_seqs(), 32, 8, 128, 16, 31));
  DeviceAttn dev;
  make_device(d, dev);
  set_splits(dev, 7);
  cuda::paged_attention_prefill(dev.args, test_launch());
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_TRUE(output_matches(d, dev, kTol)) << "prefill kernel";
  const std::vector<float> by_prefill = to_float(dev.out.download());
  for (auto load : {cuda::DecodeLoad::Registers, cuda::DecodeLoad::Pipelined, cuda::DecodeLoad::Mma}) {
    SCOPED_TRACE(std::string("K/V ") + load_name(load));
    dev.out.poison();
    dev.args.decode_load = load;
    cuda::paged_attention_decode(dev.args, test_launch());
    CUDA_OK(cudaDeviceSynchronize());
    EXPECT_TRUE(output_matches(d, dev, kTol)) << "decode kernel";
    // Both are F32 inside (prefill rounds P to bf16 too) and round the output once to bf16.
    EXPECT_LT(normalised_error(to_float(dev.out.download()), by_prefill), kTol);
  }
}

// A decode captured once replays correctly after the context lengths (and block tables, cache and
// queries) change in place: each split derives its key range from context_len on the device.
void captured_graph_follows_new_context_lengths(cuda::DecodeLoad load) {
  SCOPED_TRACE(std::string("K/V ") + load_name(load));
  AttnCase a = make_case({{1, 20}, {1, 700}, {1, 0}, {1, 64}, {1, 300}}, 16, 4, 128, 16, 11);
  a.min_blocks = 200;  // same cache size for both steps
  AttnCase b = a;
  b.seqs = {{1, 1500}, {1, 3}, {1, 17}, {1, 0}, {1, 1201}};
  b.seed = 12;
  const AttnData da = make_data(a), db = make_data(b);
  ASSERT_EQ(da.num_blocks, db.num_blocks);
  DeviceAttn dev;
  make_device(da, dev, db.block_tables.size());
  set_splits(dev, 8);
  dev.args.decode_load = load;
  dev.workspace.poison();

  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  cuda::paged_attention_decode(dev.args, test_launch(stream));
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));

  CUDA_OK(cudaGraphLaunch(exec, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  EXPECT_TRUE(output_matches(da, dev, kTol)) << "first replay";
  EXPECT_TRUE(counters_are_zero(dev));

  const cuda::PagedAttentionArgs captured = dev.args;
  refill_device(db, dev);
  ASSERT_EQ(dev.args.q, captured.q);  // same addresses: the graph reads the new data
  ASSERT_EQ(dev.args.k_cache, captured.k_cache);
  CUDA_OK(cudaGraphLaunch(exec, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  EXPECT_TRUE(output_matches(db, dev, kTol)) << "replay after new context lengths";
  EXPECT_TRUE(counters_are_zero(dev));

  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST(GpuPagedDecode, CapturedGraphFollowsNewContextLengths) {
  INFERDESK_REQUIRE_GPU();
  captured_graph_follows_new_context_lengths(cuda::DecodeLoad::Registers);
  captured_graph_follows_new_context_lengths(cuda::DecodeLoad::Pipelined);
  captured_graph_follows_new_context_lengths(cuda::DecodeLoad::Mma);
}

TEST(GpuPagedDecode, WorkspaceSizes) {
  INFERDESK_REQUIRE_GPU();
  EXPECT_EQ(cuda::decode_workspace_bytes(64, 32, 128, 1), 0u);  // one split writes out directly
  const size_t s8 = cuda::decode_workspace_bytes(64, 32, 128, 8);
  EXPECT_GE(s8, size_t{64} * 32 * 8 * (128 + 1) * sizeof(float));
  EXPECT_GT(cuda::decode_workspace_bytes(64, 32, 128, 9), s8);
  EXPECT_GT(cuda::decode_workspace_bytes(65, 32, 128, 8), s8);
}

}  // namespace
}  // namespace inferdesk::gputest::attn
