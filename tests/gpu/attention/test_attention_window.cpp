// The sliding window as the Mistral fixture (tests/golden/models/mistral) meets it in the engine's
// batch-invariance test: 4 query heads over 2 kv heads of 32 dims, window 32, blocks of 16,
// prompts of up to 90-110 tokens cut into chunks of at most 48 (a chunk attends to the cached
// blocks of the earlier chunks), decode rows at contexts 60..110 riding in the same prefill launch,
// and the same decode rows through the decode kernel with the split counts the backend picks on an
// H200 (1 sequence: 32 splits, 8: 17, 16: 9). Every output against the CPU backend's attention.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "cuda/kernels/attention.h"
#include "tests/gpu/attention/attention_harness.h"

namespace inferdesk::gputest::attn {
namespace {

AttnCase mistral_case(std::vector<SeqSpec> seqs, uint64_t seed, int32_t window = 32) {
  AttnCase c = make_case(std::move(seqs), 4, 2, 32, 16, seed);
  c.sliding_window = window;
  return c;
}

// Decode rows at every context in [lo, hi].
std::vector<SeqSpec> decode_rows(int32_t lo, int32_t hi) {
  std::vector<SeqSpec> out;
  for (int32_t ctx = lo; ctx <= hi; ++ctx) out.push_back({1, ctx});
  return out;
}

// One mixed step: chunks of prompts of 110, 96, 90 and 70 tokens as a 48-token budget cuts them
// (first, middle and last chunks; 25 + 45 is the split the scheduler makes of a 70-token prompt
// behind other work), short whole prompts, and decode rows at every context 60..110.
std::vector<SeqSpec> mixed_step() {
  std::vector<SeqSpec> seqs = {
      {48, 48},  {48, 96}, {14, 110},  // a 110-token prompt: 48 + 48 + 14
      {42, 90},                        // a 90-token prompt's second chunk
      {25, 25},  {45, 70},             // a 70-token prompt: 25 + 45
      {48, 100}, {10, 58}, {2, 50},    // chunks ending anywhere relative to blocks and tiles
      {7, 7},    {1, 1},   {3, 0},     // a whole short prompt, a first token, a padding sequence
  };
  for (const SeqSpec& s : decode_rows(60, 110)) seqs.push_back(s);
  return seqs;
}

TEST(GpuWindowMistral, PrefillKernelChunksAndDecodeRowsMatchCpu) {
  INFERDESK_REQUIRE_GPU();
  for (uint64_t seed : {1, 2, 3}) run_and_check(mistral_case(mixed_step(), 40 + seed), Kernel::Prefill);
}

// Windows one below and above a block multiple: the first visible key is never block aligned
// where it was, and the tile-skip boundaries move.
TEST(GpuWindowMistral, PrefillKernelNeighbouringWindows) {
  INFERDESK_REQUIRE_GPU();
  for (int32_t window : {31, 33, 48, 64, 65})
    run_and_check(mistral_case(mixed_step(), 50 + window, window), Kernel::Prefill);
}

// Every chunking of one 110-token prompt into chunks of at most 48 tokens ending at each position
// from 49 on: chunk rows at positions that straddle one or two 64-key tiles and the window.
TEST(GpuWindowMistral, PrefillKernelEveryChunkEnd) {
  INFERDESK_REQUIRE_GPU();
  std::vector<SeqSpec> seqs;
  for (int32_t end = 49; end <= 110; ++end) seqs.push_back({std::min(48, end - 48), end});
  for (int32_t end = 49; end <= 110; end += 3) seqs.push_back({48, end});
  run_and_check(mistral_case(seqs, 61), Kernel::Prefill);
}

class WindowDecodeSplits : public ::testing::TestWithParam<int> {};

TEST_P(WindowDecodeSplits, DecodeRowsMatchCpu) {
  INFERDESK_REQUIRE_GPU();
  std::vector<SeqSpec> seqs = decode_rows(60, 110);
  seqs.push_back({1, 0});  // graph-bucket padding
  seqs.push_back({1, 1});
  seqs.push_back({1, 33});
  run_and_check(mistral_case(seqs, 70 + GetParam()), Kernel::Decode, GetParam());
}

INSTANTIATE_TEST_SUITE_P(BackendSplitCounts, WindowDecodeSplits, ::testing::Values(1, 2, 9, 17, 32),
                         [](const auto& info) {
                           return param_name({{"S", info.param}});
                         });

// The two kernels a decode row can take (alone: the decode kernel; next to a prefill chunk: the
// prefill kernel) agree with each other, not only each with the CPU.
TEST(GpuWindowMistral, DecodeAndPrefillKernelsAgreeOnDecodeRows) {
  INFERDESK_REQUIRE_GPU();
  const AttnData d = make_data(mistral_case(decode_rows(60, 110), 81));
  DeviceAttn dev;
  make_device(d, dev);
  cuda::paged_attention_prefill(dev.args, test_launch());
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_TRUE(output_matches(d, dev, kTol)) << "prefill kernel";
  const std::vector<float> by_prefill = to_float(dev.out.download());
  for (int32_t splits : {1, 9, 32}) {
    set_splits(dev, splits);
    dev.out.poison();
    cuda::paged_attention_decode(dev.args, test_launch());
    CUDA_OK(cudaDeviceSynchronize());
    EXPECT_TRUE(output_matches(d, dev, kTol)) << "decode kernel, " << splits << " splits";
    // Different summation orders, the prefill kernel's bf16 P and two bf16 output roundings: a few
    // 1e-3 apart; a key missing from one of them is 0.1 or more.
    EXPECT_LT(normalised_error(to_float(dev.out.download()), by_prefill), kTol) << splits << " splits";
  }
}

}  // namespace
}  // namespace inferdesk::gputest::attn
