// The timing and reporting helpers of the kernel microbenchmarks (bench_gpu_kernels.cpp,
// bench_fp8.cpp): graph-captured launches timed by cudaEvents (median per launch), bytes per
// second against the H200's copy bandwidth, device allocations freed at exit.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "cuda/kernels/common.h"
#include "cuda/kernels/elementwise.h"
#include "cuda/kernels/launch.h"
#include "cuda/kernels/rope_kv.h"

namespace inferdesk::benchutil {

using cuda::Dt;
using cuda::Launch;
using cuda::Mat;

constexpr double kPeakGBs = 4300.0;  // H200 copy bandwidth measured for issue 5 (4,250 GB/s)
constexpr int kIters = 20;           // launches per graph
constexpr int kReps = 7;             // graph replays timed (median)

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// Device allocations of the bench, freed at exit.
struct Pool {
  std::vector<void*> ptrs;
  void* get(size_t bytes) {
    void* p = nullptr;
    check(cudaMalloc(&p, std::max<size_t>(bytes, 16)), "cudaMalloc");
    ptrs.push_back(p);
    return p;
  }
  ~Pool() {
    for (void* p : ptrs) cudaFree(p);
  }
};

inline Mat mat(void* p, Dt dt, int64_t rows, int64_t cols) { return Mat{p, dt, rows, cols, cols}; }
inline Mat random_mat(Pool& pool, Dt dt, int64_t rows, int64_t cols, uint64_t seed, float scale, const Launch& l) {
  Mat m = mat(pool.get(static_cast<size_t>(rows * cols) * (dt == Dt::F32 ? 4 : 2)), dt, rows, cols);
  fill_random(m, seed, scale, l);
  return m;
}

// Median microseconds per launch of launch(i) for i in [0, kIters).
inline double time_us(cudaStream_t s, const std::function<void(int)>& launch) {
  for (int i = 0; i < 2; ++i) launch(i);  // warm up (and lazy module loading) outside the graph
  check(cudaStreamSynchronize(s), "warm-up");
  cudaGraph_t g;
  cudaGraphExec_t ge;
  check(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "begin capture");
  for (int i = 0; i < kIters; ++i) launch(i);
  check(cudaStreamEndCapture(s, &g), "end capture");
  check(cudaGraphInstantiate(&ge, g, 0), "instantiate");
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  check(cudaGraphLaunch(ge, s), "graph launch");  // warm replay
  std::vector<double> us;
  for (int r = 0; r < kReps; ++r) {
    cudaEventRecord(a, s);
    check(cudaGraphLaunch(ge, s), "graph launch");
    cudaEventRecord(b, s);
    check(cudaEventSynchronize(b), "kernel run");
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    us.push_back(1000.0 * ms / kIters);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

inline void report(const std::string& name, const std::string& shape, double us, double bytes) {
  const double gbs = bytes / (us * 1e-6) / 1e9;
  std::printf("%-14s %-34s %10.2f us %9.1f GB/s %6.1f%%\n", name.c_str(), shape.c_str(), us, gbs,
              100.0 * gbs / kPeakGBs);
  std::fflush(stdout);
}

inline bool wanted(const std::string& name, const char* filter) {
  return !filter || name.find(filter) != std::string::npos;
}

// Enough copies of a `bytes` weight that cycling through them does not fit the L2 (50 MB on H200).
inline int copies_for(size_t bytes) {
  const size_t target = size_t{512} << 20;
  return static_cast<int>(std::clamp<size_t>((target + bytes - 1) / bytes, 1, 16));
}

// RopeKvArgs over a fused [T, (Hq + 2 Hk) * D] qkv at q, with positions 1000 + i, slots i, a cache
// big enough for them and Llama-3 (theta 500000) frequencies, all in `pool`.
inline cuda::RopeKvArgs rope_args(Pool& pool, cuda::bf16* q, int32_t T, int32_t Hq, int32_t Hk, int32_t D) {
  constexpr int32_t bs = 16;
  const int64_t width = int64_t{Hq + 2 * Hk} * D;
  const int32_t blocks = (T + bs - 1) / bs;
  const size_t cache_bytes = static_cast<size_t>(blocks) * Hk * bs * D * 2;
  std::vector<int32_t> pos(static_cast<size_t>(T)), slots(pos.size());
  for (int32_t i = 0; i < T; ++i) pos[static_cast<size_t>(i)] = 1000 + i, slots[static_cast<size_t>(i)] = i;
  std::vector<float> inv(static_cast<size_t>(D / 2));
  for (int i = 0; i < D / 2; ++i) inv[static_cast<size_t>(i)] = 1.0f / std::pow(500000.0f, 2.0f * i / D);
  auto upload = [&](const void* src, size_t bytes) {
    void* p = pool.get(bytes);
    check(cudaMemcpy(p, src, bytes, cudaMemcpyHostToDevice), "rope metadata");
    return p;
  };
  cuda::RopeKvArgs a;
  a.q = q;
  a.q_stride = a.k_stride = a.v_stride = width;
  a.k = a.q + int64_t{Hq} * D;
  a.v = a.k + int64_t{Hk} * D;
  a.inv_freq = static_cast<const float*>(upload(inv.data(), inv.size() * 4));
  a.rotary_dim = D;
  a.positions = static_cast<const int32_t*>(upload(pos.data(), pos.size() * 4));
  a.slot_mapping = static_cast<const int32_t*>(upload(slots.data(), slots.size() * 4));
  a.k_cache = static_cast<cuda::bf16*>(pool.get(cache_bytes));
  a.v_cache = static_cast<cuda::bf16*>(pool.get(cache_bytes));
  a.num_tokens = T;
  a.num_q_heads = Hq;
  a.num_kv_heads = Hk;
  a.head_dim = D;
  a.block_size = bs;
  return a;
}

}  // namespace inferdesk::benchutil
