// cuBLASLt GEMMs for the CUDA backend: y[M, N] = x[M, K] @ W[N, K]^T (+ bias), BF16 inputs, F32
// accumulation, BF16 or F32 output. For each decode-sized shape (M <= 256) the candidates of
// cuBLASLt's heuristic are timed once on the real operands (autotuning) and the fastest is cached
// with its descriptors; larger M, and a shape first seen inside a graph capture, take the
// heuristic's first choice.
// With `log` (CudaTuning::gemm_log) each tuned shape is printed with its chosen algorithm.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "cuda/kernels/common.h"

namespace inferdesk::cuda {

class Gemm {
 public:
  explicit Gemm(bool log = false);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  // x BF16 [M, K] (row stride x.stride), w BF16 [N, K] contiguous, y BF16/F32 [M, N] (stride
  // y.stride), bias BF16 [N] or null (only with a BF16 output). Operands need not be 256-byte
  // aligned (row slices of a gathered buffer are not): the plan is chosen for the alignment they
  // have. autotune false: take the heuristic's first choice even for a small M (shapes whose M
  // changes every step, e.g. the per-expert GEMMs of a MoE layer, where timing each new M would
  // cost more than it saves and would synchronise).
  void run(const Mat& x, const bf16* w, int64_t n, int64_t k, const bf16* bias, Mat y, cudaStream_t stream,
           bool autotune = true);

 private:
  struct Plan;
  // (m, n, k, ldx, ldy, F32 output, bias, alignment in bytes of the least aligned operand, tuned)
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int, bool, uint32_t, bool>;
  Plan& plan(const Key& key, const Mat& x, const bf16* w, const bf16* bias, const Mat& y, cudaStream_t stream);
  static void log_choice(const Plan& p, int64_t m, int64_t n, int64_t k, bool out_f32, int found, float ms);
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 32u << 20;
  bool log_ = false;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace inferdesk::cuda
