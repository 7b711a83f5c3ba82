#include "cuda/backend/kernel_policy.h"

#include <algorithm>

#include "core/util/error.h"

#include "cuda/kernels/elementwise.h"
#include "cuda/kernels/gemv.h"

namespace inferdesk::cuda {

KernelPolicy::KernelPolicy(CudaContext& ctx, const CudaBackendOptions& o)
    : ctx_(ctx), tuning_(o.tuning), small_batch_gemv_(o.small_batch_gemv), gemm_(o.tuning.gemm_log), fp8_gemm_(ctx) {
  const bool hopper = hopper_kernels_available();
  wide_swiglu_ = hopper && tuning_.wide_swiglu;
  wide_ksplit_ = hopper && tuning_.wide_ksplit;
  fp8_wide_ = hopper;
  fused_norm_ = wide_ksplit_ && o.fused_norm;
  if (fused_norm_)
    norm_ss_ = ctx_.memory.alloc(static_cast<size_t>(ctx_.sm_count) * kWideNormRows * sizeof(float), MemKind::Other,
                                 "norm partial sums");
}

const Tensor& KernelPolicy::settled(const Tensor& t) {
  if (!deferred_.h || t.data != deferred_.h) return t;
  Mat h = as_mat(t);
  h.rows = deferred_.rows;
  wide_norm_scale_rows(h, norm_ss_.as<float>(), deferred_.tiles, deferred_.norm_k, deferred_.eps, ctx_.launch);
  deferred_ = {};
  return t;
}

const WideNorm* KernelPolicy::deferred_for(const Tensor& x, WideNorm& storage) const {
  if (!deferred_.h || x.data != deferred_.h || x.rows != deferred_.rows) return nullptr;
  storage = WideNorm{};
  storage.ss_in = norm_ss_.as<float>();
  storage.ss_tiles = deferred_.tiles;
  storage.norm_k = deferred_.norm_k;
  storage.eps = deferred_.eps;
  return &storage;
}

bool KernelPolicy::try_wide_ksplit(const Mat& x, const bf16* w, int64_t n, int64_t k, const Mat& y,
                                   const WideNorm* norm) {
  if (!wide_ksplit_ || !wide_rows(x.rows) || !wide_gemm_ksplit_supported(x, w, n, k, y, ctx_.sm_count)) return false;
  wide_gemm_ksplit(x, w, n, k, y, ctx_.sm_count, ctx_.launch, norm);
  return true;
}

bool KernelPolicy::try_wide_swiglu(const Mat& x, const bf16* w, int64_t n, int64_t k, const Mat& y,
                                   const WideNorm* norm) {
  if (!wide_swiglu_ || !wide_rows(x.rows) || !wide_gemm_swiglu_supported(x, w, n, k, y, ctx_.sm_count)) return false;
  wide_gemm_swiglu(x, w, n, k, y, ctx_.sm_count, ctx_.launch, norm);
  return true;
}

// GEMV up to 8 rows (memory-bound); on Hopper the K-split wide kernel for decode batches (which
// also applies a deferred norm of x in its epilogue); cuBLASLt otherwise.
void KernelPolicy::linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor out) {
  if (w.quant) return fp8_linear(x, w, bias, out);
  const bf16* wp = bf16_ptr(w, "weight");
  const bf16* bp = bias ? bf16_ptr(*bias, "bias") : nullptr;
  if (w.stride != w.cols) throw Error(ErrorCode::Internal, "weights must be contiguous");
  const Mat xm = as_mat(x), ym = as_mat(out);
  WideNorm storage;
  if (const WideNorm* nm = deferred_for(x, storage); nm && !bp && try_wide_ksplit(xm, wp, w.rows, w.cols, ym, nm))
    return;
  settled(x);
  if (small_batch(x.rows) && w.cols % 8 == 0)
    gemv(xm, wp, w.rows, w.cols, bp, ym, ctx_.launch);
  else if (bp || !try_wide_ksplit(xm, wp, w.rows, w.cols, ym, nullptr))
    gemm_.run(xm, wp, w.rows, w.cols, bp, ym, ctx_.stream);
}

// GEMV with SiLU * up fused up to 8 rows; on Hopper the wide SwiGLU kernel for decode batches;
// else cuBLASLt into scratch and silu_mul.
void KernelPolicy::linear_swiglu(const Tensor& x, const Tensor& w, Tensor scratch, Tensor out) {
  if (w.quant) return fp8_linear_swiglu(x, w, scratch, out);
  const int64_t inter = w.rows / 2;
  const bf16* wp = bf16_ptr(w, "weight");
  if (small_batch(x.rows) && w.cols % 8 == 0) {
    gemv_swiglu(input(x), wp, inter, w.cols, as_mat(out), ctx_.launch);
    return;
  }
  WideNorm storage;
  const WideNorm* nm = deferred_for(x, storage);
  if (!nm) settled(x);
  if (w.stride == w.cols && try_wide_swiglu(as_mat(x), wp, w.rows, w.cols, as_mat(out), nm)) return;
  gemm_.run(input(x), wp, w.rows, w.cols, nullptr, as_mat(scratch), ctx_.stream);
  silu_mul(as_mat(scratch.col_slice(0, inter)), as_mat(scratch.col_slice(inter, inter)), as_mat(out), ctx_.launch);
}

// On Hopper, decode batches of up to kWideNormRows rows: the K-split kernel adds the projection to
// the residual and writes the norm's partial sums; the next consumer scales the rows.
bool KernelPolicy::fused_linear_add_rms_norm(const Tensor& x, const Tensor& w, Tensor residual, const Tensor& norm_w,
                                             float eps, Tensor out) {
  settled(x);
  if (deferred_.h == out.data) deferred_ = {};  // overwritten
  if (w.quant) return false;                    // FP8: the projection, then add_rms_norm
  const Mat xm = as_mat(x), om = as_mat(out), rm = as_mat(residual);
  const bf16* const wp = bf16_ptr(w, "weight");
  const int64_t n = w.rows, k = w.cols;
  const int32_t tiles = wide_gemm_ksplit_tiles(n, ctx_.sm_count);  // partial sums per row
  if (!fused_norm_ || !wide_rows(x.rows) || x.rows > kWideNormRows || w.stride != w.cols || rm.dt != Dt::F32 ||
      rm.cols != n || om.cols != n || out.rows != x.rows || tiles > ctx_.sm_count ||
      !wide_gemm_ksplit_supported(xm, wp, n, k, om, ctx_.sm_count))
    return false;
  WideNorm nm;
  nm.resid = static_cast<float*>(rm.data);
  nm.ld_resid = rm.stride;
  nm.gamma = bf16_ptr(norm_w, "norm weight");
  nm.ss_out = norm_ss_.as<float>();
  wide_gemm_ksplit(xm, wp, n, k, om, ctx_.sm_count, ctx_.launch, &nm);
  deferred_ = {out.data, out.rows, tiles, static_cast<int32_t>(n), eps};
  ++fused_norms_;
  return true;
}

// Split only when the (sequence, kv head) blocks do not fill the SMs once: then enough splits for
// about decode_waves waves; the kernel uses fewer for short contexts (decode_min_keys each).
int32_t KernelPolicy::decode_splits(int32_t num_seqs, int32_t num_kv_heads) const {
  const int64_t work = int64_t{num_seqs} * std::max(num_kv_heads, 1);
  if (work >= ctx_.sm_count) return 1;
  return static_cast<int32_t>(
      std::clamp<int64_t>((int64_t{tuning_.decode_waves} * ctx_.sm_count + work - 1) / work, 1, 32));
}

void KernelPolicy::choose_decode_kernels(PagedAttentionArgs& a) const {
  a.min_keys_per_split = tuning_.decode_min_keys;
  a.small_grid_load = DecodeLoad::Registers;
  a.large_grid_load = tuning_.decode_mma ? DecodeLoad::Mma : DecodeLoad::Pipelined;
  a.small_grid_heads_per_block = tuning_.decode_heads_per_block;
  a.max_heads_per_block = tuning_.decode_max_heads;
}

}  // namespace inferdesk::cuda
