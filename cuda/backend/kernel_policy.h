// Which kernel serves an op of a given shape on this device, decided in one place: the GEMM path
// of each projection (our GEMV up to 8 rows; on Hopper our wide kernels for decode batches; else
// cuBLASLt; FP8 weights: kernel_policy_fp8.cpp) and the decode-attention grid. It also owns the deferred norm: a fused
// linear_add_rms_norm leaves its output unscaled until a consumer's epilogue applies the scale, and
// every other op asks settled()/input() for its operands, which scales them first when needed.
#pragma once

#include <cstdint>

#include "core/backend/backend.h"
#include "core/backend/cuda_options.h"
#include "cuda/backend/context.h"
#include "cuda/backend/fp8_gemm.h"
#include "cuda/backend/gemm.h"
#include "cuda/kernels/attention.h"
#include "cuda/kernels/common.h"
#include "cuda/kernels/fp8_linear.h"
#include "cuda/kernels/gemv.h"
#include "cuda/kernels/sm90a/wide_gemm.h"

namespace inferdesk::cuda {

class KernelPolicy {
 public:
  KernelPolicy(CudaContext& ctx, const CudaBackendOptions& options);

  // A new step: nothing is deferred.
  void begin_step() { deferred_ = {}; }
  // `t` ready for any reader: scaled in place first when it is the deferred norm's output.
  const Tensor& settled(const Tensor& t);
  Mat input(const Tensor& t) { return as_mat(settled(t)); }

  // y = x @ w^T (+ bias).
  void linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor out);
  // out = silu(x @ gate^T) * (x @ up^T), w stacking gate over up; scratch holds both products when
  // they are computed apart.
  void linear_swiglu(const Tensor& x, const Tensor& w, Tensor scratch, Tensor out);
  // The fused residual add + RMSNorm after a projection, when this shape has it (else false: the
  // caller composes it from linear and add_rms_norm). `out` is then deferred.
  bool fused_linear_add_rms_norm(const Tensor& x, const Tensor& w, Tensor residual, const Tensor& norm_w, float eps,
                                 Tensor out);
  // Whether `rows` decode rows take the small-batch kernels (GEMV, the fused q|k|v rope).
  bool small_batch(int64_t rows) const { return small_batch_gemv_ && rows <= kGemvMaxRows; }

  // Decode attention: splits of each sequence's keys for a grid of num_seqs x num_kv_heads
  // blocks, and the kernel choices of a launch.
  int32_t decode_splits(int32_t num_seqs, int32_t num_kv_heads) const;
  void choose_decode_kernels(PagedAttentionArgs& a) const;

  Gemm& gemm() { return gemm_; }
  int64_t fused_norms() const { return fused_norms_; }

  // FP8 weights (Tensor::quant; kernel_policy_fp8.cpp): the GEMV with the activation quantization
  // fused up to 8 rows; otherwise activations quantized into a workspace, then on Hopper the wide
  // wgmma kernels for 9-64 rows, cuBLASLt FP8 for more, and the CUDA-core kernel for shapes none of
  // them serves. Error(Unsupported) naming the scheme for one the backend does not run.
  static bool fp8_supported(const QuantInfo& q);
  static Fp8Weight fp8_weight(const Tensor& w);
  void fp8_linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor out);
  void fp8_linear_swiglu(const Tensor& x, const Tensor& w, Tensor scratch, Tensor out);

 private:
  bool wide_rows(int64_t rows) const { return rows > kGemvMaxRows && rows >= tuning_.wide_min_rows; }
  bool try_wide_ksplit(const Mat& x, const bf16* w, int64_t n, int64_t k, const Mat& y, const WideNorm* norm);
  bool try_wide_swiglu(const Mat& x, const bf16* w, int64_t n, int64_t k, const Mat& y, const WideNorm* norm);
  // The consumer half for x when x is the deferred output (else null).
  const WideNorm* deferred_for(const Tensor& x, WideNorm& storage) const;

  CudaContext& ctx_;
  const CudaTuning tuning_;
  const bool small_batch_gemv_;
  bool wide_swiglu_ = false, wide_ksplit_ = false, fused_norm_ = false;
  Gemm gemm_;

  struct DeferredNorm {
    const void* h = nullptr;  // none when null
    int64_t rows = 0;
    int32_t tiles = 0, norm_k = 0;
    float eps = 0.0f;
  };
  DeferredNorm deferred_;
  DeviceBuffer norm_ss_;  // [sm_count][kWideNormRows] partial sums of squares
  int64_t fused_norms_ = 0;

  // FP8: rows quantized in chunks of at most this many (bounds the workspace).
  static constexpr int64_t kFp8ChunkRows = 4096;
  bool fp8_wide_rows(int64_t rows) const;
  // x quantized for w into the workspace (grown outside graph captures only).
  Fp8X fp8_quantized(const Mat& x, const Fp8Weight& w);
  // y = q @ w^T for one chunk of quantized rows; and x @ w^T for any rows (chunked).
  void fp8_matmul_q(const Fp8X& q, const Fp8Weight& w, const bf16* bias, const Mat& y);
  void fp8_matmul(const Mat& x, const Fp8Weight& w, const bf16* bias, const Mat& y);
  bool fp8_wide_ = false;
  Fp8Gemm fp8_gemm_;
  DeviceBuffer fp8_ws_;
};

}  // namespace inferdesk::cuda
