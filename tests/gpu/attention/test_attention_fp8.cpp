// The paged-attention kernels over an E4M3 cache (cuda/kernels/kv_format.h) against the CPU
// backend with KvCacheDtype::Fp8 and the same per-layer scales: prefill (mixed batches, chunks over
// earlier cached blocks), decode with every K/V load (run_and_check: registers, the CUDA-core
// pipeline, the tensor-core kernel, Auto), every head_dim, GQA groups, block sizes, sliding
// windows, long contexts with many splits, unaligned caches (scalar loads) and scales below, at
// and above 1, saturating ones included.
//
// Tolerance: the harness quantizes the cache on the host exactly as the CPU backend rounds it
// (encode_cache: core/util/fp8.h), so kernels and reference read identical K/V values and differ
// only in their arithmetic, as on the BF16 path: the output's BF16 rounding (2^-9 relative), P
// rounded before P.V (F16 here, 2^-11 relative, finer than the BF16 path's 2^-8) and q in F16
// (exact for BF16 values of magnitude 2^-14..65504, the range of these cases). kTol (1e-2) holds
// that with the BF16 path's margin; a wrong dim permutation, key pair, byte order or scale gives
// normalised errors of 0.1..1.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "cuda/kernels/attention.h"
#include "tests/gpu/attention/attention_harness.h"

namespace inferdesk::gputest::attn {
namespace {

// (K scale, V scale) pairs over the harness's values in [-1, 1]: at 1; small scales (codes up to
// 250 and 100); large ones (many codes subnormal: |v| / 4 < 2^-6); saturating ones (|v| above
// 448 / 512 = 0.875 for K, 0.75 for V clamp to 448).
struct Scales {
  float k, v;
};
constexpr Scales kScales[] = {{1.0f, 1.0f}, {0.004f, 0.01f}, {4.0f, 0.5f}, {1.0f / 512, 1.0f / 600}};

AttnCase fp8_case(std::vector<SeqSpec> seqs, int32_t heads, int32_t kv_heads, int32_t head_dim, int32_t block_size,
                  uint64_t seed, const Scales& s) {
  return with_fp8(make_case(std::move(seqs), heads, kv_heads, head_dim, block_size, seed), s.k, s.v);
}

// What a mixed prefill step holds: chunks over cached blocks, whole prompts, decode rows, padding.
std::vector<SeqSpec> mixed_seqs() {
  return {{1, 1}, {15, 15}, {17, 17}, {1, 100}, {37, 300}, {3, 0}, {100, 100}, {0, 0}, {1, 1000}, {64, 1037}, {2, 2}};
}
std::vector<SeqSpec> decode_seqs() {
  return {{1, 1}, {1, 15}, {1, 17}, {1, 100}, {1, 0}, {1, 1000}, {1, 64}, {0, 0}, {1, 1500}, {1, 257}};
}

class Fp8PrefillShapes : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(Fp8PrefillShapes, MixedBatchMatchesCpu) {
  INFERDESK_REQUIRE_GPU();
  const auto [head_dim, group] = GetParam();
  const int block_sizes[] = {8, 16, 32, 64};
  const int i = head_dim / 32 + group;
  run_and_check(fp8_case(mixed_seqs(), 2 * group, 2, head_dim, block_sizes[i % 4], 3000 + head_dim * 10 + group,
                         kScales[i % 4]),
                Kernel::Prefill);
}

INSTANTIATE_TEST_SUITE_P(HeadDimGroup, Fp8PrefillShapes,
                         ::testing::Combine(::testing::Values(32, 64, 128, 256), ::testing::Values(1, 2, 3, 4, 8)),
                         [](const auto& info) {
                           return param_name({{"D", std::get<0>(info.param)}, {"G", std::get<1>(info.param)}});
                         });

class Fp8DecodeShapes : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(Fp8DecodeShapes, MatchesCpu) {
  INFERDESK_REQUIRE_GPU();
  const auto [head_dim, group, splits] = GetParam();
  const int block_sizes[] = {16, 8, 32, 64};
  const int i = head_dim / 32 + group + splits;
  run_and_check(fp8_case(decode_seqs(), 2 * group, 2, head_dim, block_sizes[i % 4],
                         4000 + head_dim * 100 + group * 10 + splits, kScales[i % 4]),
                Kernel::Decode, splits);
}

// Groups of 1..8 and 12 (the Mma kernel's two n-blocks), one split and several.
INSTANTIATE_TEST_SUITE_P(HeadDimGroupSplits, Fp8DecodeShapes,
                         ::testing::Combine(::testing::Values(32, 64, 128, 256), ::testing::Values(1, 2, 4, 5, 8, 12),
                                            ::testing::Values(1, 16)),
                         [](const auto& info) {
                           return param_name({{"D", std::get<0>(info.param)},
                                              {"G", std::get<1>(info.param)},
                                              {"S", std::get<2>(info.param)}});
                         });

// Every scale on the Llama-3.1-8B head shape, both kernels.
TEST(GpuPagedAttentionFp8, EveryScaleBothKernels) {
  INFERDESK_REQUIRE_GPU();
  int n = 0;
  for (const Scales& s : kScales) {
    run_and_check(fp8_case(mixed_seqs(), 32, 8, 128, 16, 70 + n, s), Kernel::Prefill);
    run_and_check(fp8_case(decode_seqs(), 32, 8, 128, 16, 80 + n, s), Kernel::Decode, 4);
    ++n;
  }
}

TEST(GpuPagedAttentionFp8, SlidingWindow) {
  INFERDESK_REQUIRE_GPU();
  for (int window : {1, 7, 33, 100, 1000}) {
    AttnCase p = fp8_case(mixed_seqs(), 4, 2, 32, 16, 900 + window, kScales[window % 4]);
    p.sliding_window = window;
    run_and_check(p, Kernel::Prefill);
    for (int splits : {1, 33}) {
      AttnCase d = fp8_case(decode_seqs(), 8, 2, 64, 16, 950 + window + splits, kScales[(window + 1) % 4]);
      d.sliding_window = window;
      run_and_check(d, Kernel::Decode, splits);
    }
  }
}

// An 8,192-token-class context (as in the long-context decode benchmark) over many splits, and a
// long prompt chunk.
TEST(GpuPagedAttentionFp8, LongContexts) {
  INFERDESK_REQUIRE_GPU();
  for (int splits : {1, 64})
    run_and_check(fp8_case({{1, 9000}, {1, 4097}}, 32, 8, 128, 16, 5 + splits, kScales[1]), Kernel::Decode, splits);
  run_and_check(fp8_case({{1100, 1100}, {256, 8192}}, 32, 8, 128, 16, 42, kScales[2]), Kernel::Prefill);
}

// A cache 3 bytes off 16-byte alignment and odd q/out strides: byte-wise tile copies (prefill),
// unaligned chunk loads (decode registers and pipeline; Mma falls back to the pipeline).
TEST(GpuPagedAttentionFp8, UnalignedCacheAndStrides) {
  INFERDESK_REQUIRE_GPU();
  for (int head_dim : {32, 64, 128, 256}) {
    AttnCase c = fp8_case({{33, 33}, {1, 70}, {20, 90}, {2, 0}}, 6, 3, head_dim, 16, 500 + head_dim, kScales[1]);
    c.q_pad = 3;
    c.out_pad = 5;
    c.q_offset = 1;
    c.cache_offset = 3;
    c.row_gap = 2;
    run_and_check(c, Kernel::Prefill);
    AttnCase d = fp8_case({{1, 33}, {1, 70}, {1, 0}, {1, 190}}, 6, 2, head_dim, 16, 600 + head_dim, kScales[3]);
    d.cache_offset = 3;
    d.q_pad = 3;
    d.q_offset = 1;
    for (int splits : {1, 5}) run_and_check(d, Kernel::Decode, splits);
  }
}

// The decode and prefill kernels agree on decode rows over the same E4M3 cache (both F32 inside
// with F16 operands), within the tolerance both have against the CPU.
TEST(GpuPagedAttentionFp8, DecodeAgreesWithPrefillKernel) {
  INFERDESK_REQUIRE_GPU();
  const AttnData d = make_data(fp8_case(decode_seqs(), 32, 8, 128, 16, 31, kScales[1]));
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
    EXPECT_LT(normalised_error(to_float(dev.out.download()), by_prefill), kTol);
  }
}

}  // namespace
}  // namespace inferdesk::gputest::attn
