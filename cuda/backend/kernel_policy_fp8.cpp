// KernelPolicy's FP8 half: which kernel serves an FP8 linear layer of a given shape (the paths of
// cuda/kernels/fp8_linear.h), and the workspace of quantized activations the non-GEMV paths use.
#include <algorithm>
#include <string>

#include "core/util/error.h"
#include "cuda/backend/kernel_policy.h"
#include "cuda/kernels/elementwise.h"
#include "cuda/kernels/sm90a/fp8_wide_gemm.h"

namespace inferdesk::cuda {

namespace {

// Rows [r0, r0 + n) of m.
Mat row_slice(const Mat& m, int64_t r0, int64_t n) {
  Mat s = m;
  s.data = static_cast<char*>(m.data) + r0 * m.stride * (m.dt == Dt::F32 ? 4 : 2);
  s.rows = n;
  return s;
}

[[noreturn]] void unsupported(const QuantInfo& q, const std::string& why) {
  throw Error(ErrorCode::Unsupported, "CUDA backend: weights quantized as " + describe(q) + " are not supported" +
                                          (why.empty() ? "" : " (" + why + ")"));
}

}  // namespace

// FP8 E4M3 weights: per-tensor or per-channel scales with per-token dynamic or static activation
// scales; 128 x 128 block scales with per-token 128-wide group activation scales.
bool KernelPolicy::fp8_supported(const QuantInfo& q) {
  if (q.scheme != QuantScheme::Fp8) return false;
  if (q.granularity == ScaleGranularity::Block)
    return q.act == ActQuant::DynamicGroup && q.block_n == kFp8Block && q.block_k == kFp8Block;
  return q.act == ActQuant::DynamicToken || q.act == ActQuant::Static;
}

Fp8Weight KernelPolicy::fp8_weight(const Tensor& w) {
  const QuantInfo& q = *w.quant;
  if (!fp8_supported(q)) unsupported(q, "");
  if (w.dtype != DType::F8E4M3) unsupported(q, std::string("weight dtype ") + dtype_name(w.dtype));
  if (w.stride != w.cols) throw Error(ErrorCode::Internal, "FP8 weights must be contiguous");
  Fp8Weight f;
  f.data = static_cast<const uint8_t*>(w.data);
  f.n = w.rows;
  f.k = w.cols;
  f.scales = static_cast<const float*>(q.scales);
  f.act = q.act == ActQuant::Static         ? Fp8Act::Static
          : q.act == ActQuant::DynamicGroup ? Fp8Act::DynamicGroup
                                            : Fp8Act::DynamicToken;
  f.input_scale = q.input_scale;
  int64_t want_rows = 1, want_cols = 1;
  switch (q.granularity) {
    case ScaleGranularity::Tensor: f.gran = Fp8Gran::Tensor; break;
    case ScaleGranularity::Channel:
      f.gran = Fp8Gran::Channel;
      want_rows = w.rows;
      break;
    case ScaleGranularity::Block:
      f.gran = Fp8Gran::Block;
      want_rows = (w.rows + kFp8Block - 1) / kFp8Block;
      want_cols = f.scale_cols = (w.cols + kFp8Block - 1) / kFp8Block;
      break;
    case ScaleGranularity::Group: unsupported(q, "group scales"); break;
  }
  if (!f.scales || q.scale_rows != want_rows || q.scale_cols != want_cols)
    throw Error(ErrorCode::Internal, "FP8 weight scales of " + std::to_string(q.scale_rows) + " x " +
                                         std::to_string(q.scale_cols) + " for a " + std::to_string(w.rows) + " x " +
                                         std::to_string(w.cols) + " weight (" + describe(q) + ")");
  return f;
}

bool KernelPolicy::fp8_wide_rows(int64_t rows) const {
  return fp8_wide_ && rows <= kFp8WideMaxRows && (!small_batch_gemv_ || rows > kFp8GemvMaxRows);
}

Fp8X KernelPolicy::fp8_quantized(const Mat& x, const Fp8Weight& w) {
  const auto need = static_cast<size_t>(fp8_x_bytes(x.rows, x.cols, w));
  if (need > fp8_ws_.bytes()) {
    // A captured graph points at the workspace: it grows only outside a capture, and the graphs
    // that used the old one are dropped.
    ctx_.graphs.forbid_capture("growing the FP8 activation workspace");
    ctx_.memory.grow(fp8_ws_, need, std::max(need, 2 * fp8_ws_.bytes()), MemKind::Other, "FP8 activations",
                     ctx_.stream);
    ctx_.graphs.invalidate();
  }
  const Fp8X q = fp8_x_at(fp8_ws_.get(), x.rows, x.cols, w);
  fp8_quantize(x, w, q, ctx_.launch);
  return q;
}

void KernelPolicy::fp8_matmul_q(const Fp8X& q, const Fp8Weight& w, const bf16* bias, const Mat& y) {
  if (fp8_wide_rows(q.rows) && fp8_wide_supported(q, w, y, false, ctx_.sm_count))
    fp8_wide_gemm(q, w, bias, y, ctx_.sm_count, ctx_.launch);
  else if (!fp8_gemm_.run(q, w, bias, y))
    fp8_gemm_simple(q, w, bias, y, ctx_.launch);
}

void KernelPolicy::fp8_matmul(const Mat& x, const Fp8Weight& w, const bf16* bias, const Mat& y) {
  for (int64_t r0 = 0; r0 < x.rows; r0 += kFp8ChunkRows) {
    const int64_t n = std::min(kFp8ChunkRows, x.rows - r0);
    const Mat xc = row_slice(x, r0, n), yc = row_slice(y, r0, n);
    fp8_matmul_q(fp8_quantized(xc, w), w, bias, yc);
  }
}

void KernelPolicy::fp8_linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor out) {
  const Fp8Weight fw = fp8_weight(w);
  const Mat xm = input(x), ym = as_mat(out);
  const bf16* bp = bias ? bf16_ptr(*bias, "bias") : nullptr;
  if (xm.dt != Dt::BF16 || x.cols != w.cols || out.cols != w.rows || out.rows < x.rows)
    throw Error(ErrorCode::Internal, "FP8 linear: BF16 x [T, " + std::to_string(w.cols) + "] and out [T, " +
                                         std::to_string(w.rows) + "] expected");
  if (small_batch(x.rows) && fp8_gemv_supported(xm, fw, ym, false))
    fp8_gemv(xm, fw, bp, ym, ctx_.launch, fp8_gemv_config(fw, false, ctx_.sm_count));
  else
    fp8_matmul(xm, fw, bp, ym);
}

void KernelPolicy::fp8_linear_swiglu(const Tensor& x, const Tensor& w, Tensor scratch, Tensor out) {
  const Fp8Weight fw = fp8_weight(w);
  const int64_t inter = w.rows / 2;
  const Mat xm = input(x), om = as_mat(out), sm = as_mat(scratch);
  if (xm.dt != Dt::BF16 || w.rows % 2 != 0 || out.cols != inter || scratch.cols != w.rows)
    throw Error(ErrorCode::Internal, "FP8 linear_swiglu: shapes do not match");
  if (small_batch(x.rows) && fp8_gemv_supported(xm, fw, om, true))
    return fp8_gemv_swiglu(xm, fw, om, ctx_.launch, fp8_gemv_config(fw, true, ctx_.sm_count));
  if (fp8_wide_rows(x.rows)) {
    const Fp8X q = fp8_quantized(xm, fw);
    if (fp8_wide_supported(q, fw, om, true, ctx_.sm_count))
      return fp8_wide_swiglu(q, fw, om, ctx_.sm_count, ctx_.launch);
    fp8_matmul_q(q, fw, nullptr, sm);
  } else {
    fp8_matmul(xm, fw, nullptr, sm);
  }
  silu_mul(as_mat(scratch.col_slice(0, inter)), as_mat(scratch.col_slice(inter, inter)), om, ctx_.launch);
}

}  // namespace inferdesk::cuda
