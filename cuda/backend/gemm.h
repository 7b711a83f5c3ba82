// cuBLASLt GEMMs for the CUDA backend: y[M, N] = x[M, K] @ W[N, K]^T (+ bias), BF16 inputs, F32
// accumulation, BF16 or F32 output. For each decode-sized shape (M <= 256) candidate algorithms are
// timed once on the real operands (autotuning) and the fastest is cached with its descriptors;
// larger M, and a shape first seen inside a graph capture, take the heuristic's first choice.
// Candidates (GemmTuning): the heuristic's first `candidates`, and with `exhaustive` every
// configuration cuBLASLt enumerates for the operand types (algorithm x tile x stages x split K x
// swizzle). With `flush_l2` every timed run starts from a cold L2 cache (a read of more than the
// cache's size in between), as in a decode step, where each layer's weights were evicted by the
// other layers: timing repeated runs on the same weight (33 MB for an 8B o projection) otherwise
// measures the L2, which favours the wrong algorithms.
// INFERDESK_GEMM_LOG=1 prints each tuned shape with the time of the chosen algorithm.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "cuda/kernels/kernels.h"

namespace inferdesk::cuda {

struct GemmTuning {
  int candidates = 32;      // of cuBLASLt's heuristic
  bool exhaustive = false;  // also every enumerated configuration (slow: ~0.1 s per shape)
  bool flush_l2 = true;     // time each run from a cold L2
  // INFERDESK_GEMM_TUNE=legacy (12 candidates, warm L2) | exhaustive, for experiments.
  static GemmTuning from_env();
};

class Gemm {
 public:
  explicit Gemm(GemmTuning tuning = GemmTuning::from_env());
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  // x BF16 [M, K] (row stride x.stride), w BF16 [N, K] contiguous, y BF16/F32 [M, N] (stride
  // y.stride), bias BF16 [N] or null (only with a BF16 output). Operands need not be 256-byte
  // aligned (row slices of a gathered buffer are not): the plan is chosen for the alignment they
  // have. autotune false: take the heuristic's first choice even for a small M (shapes whose M
  // changes every step, e.g. the per-expert GEMMs of a MoE layer, where timing each new M would
  // cost more than it saves and would synchronise).
  void run(const Mat& x, const bf16* w, int64_t n, int64_t k, const bf16* bias, Mat y,
           cudaStream_t stream, bool autotune = true);

 private:
  struct Plan;
  // (m, n, k, ldx, ldy, F32 output, bias, alignment in bytes of the least aligned operand, tuned)
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int, bool, uint32_t, bool>;
  Plan& plan(const Key& key, const Mat& x, const bf16* w, const bf16* bias, const Mat& y,
             cudaStream_t stream);
  // Candidate algorithms for the plan's descriptors: the heuristic's, then (exhaustive) the
  // enumerated ones that cuBLASLt accepts for these operands.
  std::vector<cublasLtMatmulAlgo_t> candidates(Plan& p, cublasLtMatmulPreference_t pref, bool out_f32,
                                               int64_t m);
  // Microseconds of one run of `algo` (median of `reps`), each from a cold L2 when flush_l2.
  float time_algo(Plan& p, const cublasLtMatmulAlgo_t& algo, const Mat& x, const bf16* w, const Mat& y,
                  int reps, cudaStream_t stream);
  void flush_l2(cudaStream_t stream);
  GemmTuning tuning_;
  void* flush_buf_ = nullptr;  // allocated for tuning only, freed after each tuned plan
  size_t flush_bytes_ = 0;
  unsigned flush_byte_ = 0;
  cudaEvent_t ev_[2] = {nullptr, nullptr};
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 32u << 20;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace inferdesk::cuda
