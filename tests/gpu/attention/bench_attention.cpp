// Microbenchmark of the paged-attention kernels on realistic shapes (not a test): prints the time
// per launch, TFLOP/s for prefill (causal FLOPs actually needed: 4 * D per visible (query, key,
// head)) and the KV-cache read bandwidth for decode (bytes of K and V of every visible key, once per
// kv head). Block tables are shuffled over the pool as in a long-running server. --kv-compare
// runs instead the shapes where an E4M3 cache matters, BF16 and E4M3 side by side (the bytes column
// counts each format's own bytes).
//
//   bench_gpu_attention [--reps N] [--block-size TOKENS] [--kv-compare]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "cuda/kernels/attention.h"
#include "cuda/kernels/common.h"
#include "cuda/kernels/elementwise.h"
#include "cuda/kernels/launch.h"
#include "tests/gpu/attention/attention_harness.h"

namespace {

using namespace inferdesk::gputest::attn;
using inferdesk::gputest::test_launch;
namespace k = inferdesk::cuda;

#define BENCH_CUDA(expr)                                               \
  do {                                                                 \
    const cudaError_t e_ = (expr);                                     \
    if (e_ != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s: %s\n", #expr, cudaGetErrorString(e_)); \
      std::exit(1);                                                    \
    }                                                                  \
  } while (0)

struct Shape {
  const char* model;
  int32_t heads, kv_heads, head_dim;
};
constexpr Shape kLlama8B{"llama-3.1-8b", 32, 8, 128};
constexpr Shape kLlama1B{"llama-3.2-1b", 32, 8, 64};
constexpr Shape kD256{"d256 (16/4 heads)", 16, 4, 256};
constexpr Shape kQwen3Moe{"qwen3-30b-a3b", 32, 4, 128};  // 8 query heads per kv head

int g_block_size = 16;  // --block-size: tokens per cache block of every case

AttnCase shape_case(const Shape& s, std::vector<SeqSpec> seqs, bool fp8 = false) {
  AttnCase c = make_case(std::move(seqs), s.heads, s.kv_heads, s.head_dim, g_block_size);
  return fp8 ? with_fp8(c, 0.05f, 0.05f) : c;
}

// Random finite E4M3 codes (exponent field below 8: magnitudes under 2, no NaN).
void fill_e4m3(uint8_t* p, size_t n, uint64_t seed) {
  std::vector<uint8_t> h(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& b : h) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = static_cast<uint8_t>(x >> 32) & 0xBF;
  }
  BENCH_CUDA(cudaMemcpy(p, h.data(), n, cudaMemcpyHostToDevice));
}

// Device data of a case with random caches and queries (no CPU reference).
void prepare(const AttnCase& c, AttnData& d, DeviceAttn& dev) {
  d = make_layout(c);
  make_device(d, dev);
  const int64_t cache_rows = int64_t{d.num_blocks} * c.num_kv_heads * c.block_size;
  if (c.kv.fp8()) {
    fill_e4m3(dev.k_cache.get(), dev.k_cache.size(), 1);
    fill_e4m3(dev.v_cache.get(), dev.v_cache.size(), 2);
  } else {
    k::fill_random({dev.k_cache.get(), k::Dt::BF16, cache_rows, c.head_dim, c.head_dim}, 1, 1.0f, test_launch());
    k::fill_random({dev.v_cache.get(), k::Dt::BF16, cache_rows, c.head_dim, c.head_dim}, 2, 1.0f, test_launch());
  }
  k::fill_random({dev.q.get(), k::Dt::BF16, d.rows, d.q_stride, d.q_stride}, 3, 2.0f, test_launch());
  BENCH_CUDA(cudaDeviceSynchronize());
}

const char* kv_name(const AttnCase& c) { return c.kv.fp8() ? "e4m3" : "bf16"; }

template <typename F>
double time_us(F launch, int reps) {
  for (int i = 0; i < 3; ++i) launch();
  cudaEvent_t a, b;
  BENCH_CUDA(cudaEventCreate(&a));
  BENCH_CUDA(cudaEventCreate(&b));
  BENCH_CUDA(cudaEventRecord(a));
  for (int i = 0; i < reps; ++i) launch();
  BENCH_CUDA(cudaEventRecord(b));
  BENCH_CUDA(cudaEventSynchronize(b));
  float ms = 0;
  BENCH_CUDA(cudaEventElapsedTime(&ms, a, b));
  BENCH_CUDA(cudaGetLastError());
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return 1000.0 * ms / reps;
}

std::string seqs_text(const std::vector<SeqSpec>& seqs) {
  const SeqSpec& s0 = seqs.front();
  const bool same = std::all_of(seqs.begin(), seqs.end(), [&](const SeqSpec& s) {
    return s.query_len == s0.query_len && s.context_len == s0.context_len;
  });
  char buf[96];
  if (same)
    std::snprintf(buf, sizeof buf, "%zu x (q %d, ctx %d)", seqs.size(), s0.query_len, s0.context_len);
  else
    std::snprintf(buf, sizeof buf, "%zu mixed seqs", seqs.size());
  return buf;
}

void bench_prefill(const Shape& s, std::vector<SeqSpec> seqs, int reps, bool fp8 = false) {
  const AttnCase c = shape_case(s, std::move(seqs), fp8);
  AttnData d;
  DeviceAttn dev;
  prepare(c, d, dev);
  double visible = 0;  // (query, key) pairs under the causal mask
  for (const SeqSpec& q : c.seqs)
    for (int32_t j = 0; j < q.query_len; ++j) visible += q.context_len - q.query_len + j + 1;
  const double flops = 4.0 * c.head_dim * c.num_heads * visible;
  const double us = time_us([&] { k::paged_attention_prefill(dev.args, test_launch()); }, reps);
  std::printf("prefill  %-18s %-28s %s %10.1f us %8.1f TFLOP/s\n", s.model, seqs_text(c.seqs).c_str(), kv_name(c), us,
              flops / us * 1e-6);
}

// Few-block (batch 1) grids are timed with the register load; larger batches with both loads for
// grids of many blocks (the CUDA-core pipeline and the tensor-core kernel), side by side.
void bench_decode(const Shape& s, int32_t batch, int32_t ctx, std::vector<int32_t> splits, int reps,
                  int32_t heads_per_block = 8, bool fp8 = false) {
  const AttnCase c = shape_case(s, std::vector<SeqSpec>(static_cast<size_t>(batch), SeqSpec{1, ctx}), fp8);
  AttnData d;
  DeviceAttn dev;
  prepare(c, d, dev);
  const double bytes = 2.0 * batch * ctx * c.num_kv_heads * c.head_dim * c.kv.elem_bytes();
  std::vector<k::DecodeLoad> loads = {k::DecodeLoad::Pipelined, k::DecodeLoad::Mma};
  if (batch == 1) loads = {k::DecodeLoad::Registers};
  for (int32_t sp : splits)
    for (k::DecodeLoad load : loads) {
      set_splits(dev, sp);
      dev.args.decode_load = load;
      dev.args.max_heads_per_block = heads_per_block;
      const double us = time_us([&] { k::paged_attention_decode(dev.args, test_launch()); }, reps);
      std::printf("decode   %-18s %-28s %s splits %4d heads/block %d %-10s %10.1f us %8.0f GB/s (KV %.0f MB)\n",
                  s.model, seqs_text(c.seqs).c_str(), kv_name(c), sp, heads_per_block, load_name(load), us,
                  bytes / us * 1e-3, bytes * 1e-6);
    }
}

}  // namespace

// BF16 and E4M3 caches side by side on the shapes where the cache is read most: the long-context
// decode of the floor (Llama-3.1-8B, batch 16 at 8,192 tokens: 16 x 8 blocks, the split
// counts the backend picks on an H200 and its neighbours), batch 64, batch 1 at 32k, D 64, and
// prefill chunks over long cached prefixes.
void kv_compare(int reps, const std::function<void(const std::function<void()>&)>& run) {
  for (const bool fp8 : {false, true}) {
    run([&] { bench_decode(kLlama8B, 16, 8192, {1, 3, 4}, reps, 8, fp8); });
    run([&] { bench_decode(kLlama8B, 64, 1024, {1, 2}, reps, 8, fp8); });
    run([&] { bench_decode(kLlama8B, 1, 32768, {32, 64}, reps, 2, fp8); });
    run([&] { bench_decode(kQwen3Moe, 16, 8192, {1, 3}, reps, 8, fp8); });
    run([&] { bench_decode(kLlama1B, 64, 1024, {1, 2}, reps, 8, fp8); });
    run([&] { bench_prefill(kLlama8B, {{512, 4608}}, reps, fp8); });
    run([&] { bench_prefill(kLlama8B, {{2048, 2048}}, reps, fp8); });
  }
}

int main(int argc, char** argv) {
  int reps = 20;
  bool compare = false;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--kv-compare") == 0)
      compare = true;
    else if (i + 1 < argc && std::strcmp(argv[i], "--reps") == 0)
      reps = std::max(1, std::atoi(argv[i + 1]));
    else if (i + 1 < argc && std::strcmp(argv[i], "--block-size") == 0)
      g_block_size = std::atoi(argv[i + 1]);
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("bench_gpu_attention: no CUDA GPU, nothing to measure\n");
    return 0;
  }
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, PDL %s, block size %d\n", prop.name, prop.multiProcessorCount,
              k::uses_pdl(test_launch()) ? "on" : "off", g_block_size);

  // A launcher that throws (a configuration error) is reported and the next shape still runs.
  int failed = 0;
  auto run = [&](auto&& bench) {
    try {
      bench();
    } catch (const std::exception& e) {
      std::printf("FAILED: %s\n", e.what());
      ++failed;
    }
  };
  if (compare) {
    kv_compare(reps, run);
    return failed == 0 ? 0 : 1;
  }
  run([&] { bench_prefill(kLlama8B, {{2048, 2048}}, reps); });
  run([&] { bench_prefill(kLlama8B, std::vector<SeqSpec>(4, SeqSpec{512, 512}), reps); });
  run([&] { bench_prefill(kLlama8B, {{512, 4608}}, reps); });  // a chunk over 4,096 cached tokens
  run([&] { bench_prefill(kLlama8B, std::vector<SeqSpec>(64, SeqSpec{1, 1024}), reps); });  // decode rows
  run([&] { bench_prefill(kLlama1B, {{2048, 2048}}, reps); });
  run([&] { bench_prefill(kD256, {{2048, 2048}}, reps); });

  run([&] { bench_decode(kLlama8B, 64, 1024, {1, 2, 4, 8}, reps); });
  run([&] { bench_decode(kLlama8B, 64, 256, {1, 2, 4}, reps); });  // the engine's batch-64 benchmark, mid-run
  run([&] { bench_decode(kLlama8B, 64, 256, {1, 2}, reps, /*heads_per_block=*/2); });
  run([&] { bench_decode(kLlama8B, 64, 256, {1}, reps, /*heads_per_block=*/1); });
  run([&] { bench_decode(kLlama8B, 256, 192, {1}, reps); });   // the offline benchmark's decode steps
  run([&] { bench_decode(kLlama8B, 1, 256, {1, 4}, reps); });  // batch 1, as in the engine's benchmark
  run([&] { bench_decode(kLlama8B, 1, 256, {4, 8}, reps, /*heads_per_block=*/2); });
  run([&] { bench_decode(kLlama8B, 1, 256, {4, 8}, reps, /*heads_per_block=*/1); });
  run([&] { bench_decode(kQwen3Moe, 1, 256, {1, 4}, reps); });
  run([&] { bench_decode(kQwen3Moe, 1, 256, {1, 4}, reps, /*heads_per_block=*/4); });
  run([&] { bench_decode(kLlama1B, 1, 256, {1, 4}, reps); });
  run([&] { bench_decode(kLlama1B, 1, 256, {4, 8}, reps, /*heads_per_block=*/2); });
  run([&] { bench_decode(kQwen3Moe, 1, 256, {4, 8}, reps, /*heads_per_block=*/2); });
  run([&] { bench_decode(kLlama8B, 1, 32768, {8, 16, 32, 64, 128, 256}, reps); });
  // Long contexts with fewer heads per block (the few-block default is 2): each block of a kv
  // group reads the group's K/V again (from L2 when the blocks run together).
  run([&] { bench_decode(kLlama8B, 1, 32768, {16, 32, 64}, reps, /*heads_per_block=*/2); });
  run([&] { bench_decode(kLlama8B, 1, 32768, {16, 32, 64}, reps, /*heads_per_block=*/1); });
  run([&] { bench_decode(kQwen3Moe, 1, 8192, {8, 16, 32}, reps); });
  run([&] { bench_decode(kQwen3Moe, 1, 8192, {8, 16, 32}, reps, /*heads_per_block=*/2); });
  run([&] { bench_decode(kLlama8B, 32, 4096, {1, 2, 4}, reps); });
  run([&] { bench_decode(kLlama8B, 1, 1024, {1, 8, 32}, reps); });
  run([&] { bench_decode(kLlama1B, 64, 1024, {1, 2, 4}, reps); });
  run([&] { bench_decode(kLlama1B, 1, 4096, {1, 16, 32}, reps); });
  run([&] { bench_decode(kD256, 16, 4096, {1, 4}, reps); });
  return failed == 0 ? 0 : 1;
}
