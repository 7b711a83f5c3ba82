// CpuBackend's quantized linear: the reference definition of every scheme in core/backend/quant.h.
// Activations are quantized exactly as the definition says (per row or per group, E4M3 with
// round-to-nearest-even and saturation), the FP8 weights are read by the same dot-product kernel
// as BF16 ones, and the scales are applied in float32 per output element.
#include <algorithm>
#include <cmath>
#include <string>

#include "core/backend/cpu/cpu_backend_impl.h"
#include "core/util/error.h"
#include "core/util/fp8.h"

namespace inferdesk::cpu {

namespace {

// The kernel reads E4M3 weights as value * 2^-8 (kernels.h).
constexpr float kE4M3KernelScale = 256.0f;

const float* frow(const Tensor& t, int64_t r) { return static_cast<const float*>(t.data) + r * t.stride; }

float scale_at(const QuantInfo& q, int64_t r, int64_t c) {
  return static_cast<const float*>(q.scales)[r * q.scale_cols + c];
}

// x rows quantized to E4M3 (as floats) into xq [T, K], one scale per row and group into sx
// [T, groups]. ActQuant::None leaves x as is with scale 1.
void quantize_rows(const Tensor& x, const QuantInfo& q, int64_t group, float* xq, float* sx) {
  const int64_t T = x.rows, K = x.cols, groups = (K + group - 1) / group;
  for (int64_t t = 0; t < T; ++t) {
    const float* xr = frow(x, t);
    float* out = xq + t * K;
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t k0 = g * group, k1 = std::min(K, k0 + group);
      if (q.act == ActQuant::None) {
        std::copy(xr + k0, xr + k1, out + k0);
        sx[t * groups + g] = 1.0f;
        continue;
      }
      float s = q.input_scale;
      if (q.act != ActQuant::Static) {
        float amax = 0.0f;
        for (int64_t k = k0; k < k1; ++k) amax = std::max(amax, std::fabs(xr[k]));
        s = std::max(amax / kFp8E4M3Max, kFp8MinActScale);
      }
      const float inv = 1.0f / s;
      for (int64_t k = k0; k < k1; ++k) out[k] = fp8_e4m3_to_f32(f32_to_fp8_e4m3(xr[k] * inv));
      sx[t * groups + g] = s;
    }
  }
}

}  // namespace

bool CpuBackend::supports_quant(const QuantInfo& q) const {
  if (q.scheme == QuantScheme::Int)
    return (q.bits == 4 || q.bits == 8) &&
           (q.act == ActQuant::None || (q.act == ActQuant::DynamicToken && q.bits == 8 &&
                                        q.granularity == ScaleGranularity::Channel && !q.has_zero_point));
  return q.scheme == QuantScheme::None || q.scheme == QuantScheme::Fp8;
}

void CpuBackend::quant_linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor out) {
  const QuantInfo& q = *w.quant;
  if (q.scheme == QuantScheme::Int) {
    int_linear(x, w, bias, out);
    return;
  }
  if (q.scheme != QuantScheme::Fp8 || w.dtype != DType::F8E4M3)
    throw Error(ErrorCode::Unsupported, "CPU backend: weights quantized as " + describe(q) + " are not supported");
  const int64_t T = x.rows, K = x.cols, N = w.rows;
  const bool block = q.granularity == ScaleGranularity::Block;
  const int64_t group = block || q.act == ActQuant::DynamicGroup ? q.block_k : K;
  if (group <= 0) throw Error(ErrorCode::Internal, "quant_linear: block width must be positive");
  const int64_t groups = (K + group - 1) / group;
  // One scratch area for the quantized rows, their scales, the bias as floats and (block scales)
  // one group's partial products: nothing allocated per call on the decode path.
  float* xq = scratch_quant_.floats(T * K + T * groups + N + (block ? T * N : 0));
  float* sx = xq + T * K;
  float* b = sx + T * groups;
  float* part = b + N;
  if (!block && groups != 1)
    throw Error(ErrorCode::Internal, "quant_linear: group activation scales need block weights");
  quantize_rows(x, q, group, xq, sx);
  if (bias && !bias->empty())
    k_.convert_row(bias->data, bias->dtype, b, N);
  else
    std::fill(b, b + N, 0.0f);

  LinearArgs a;
  a.w_dtype = DType::F8E4M3;
  a.w_stride = w.stride;
  a.T = T;
  a.O = N;
  a.x_stride = K;
  float* o = static_cast<float*>(out.data);
  if (!block) {
    // One activation scale per row (groups == 1): scale the whole dot product once.
    a.x = xq;
    a.w = w.data;
    a.K = K;
    a.out = o;
    a.out_stride = out.stride;
    run_linear(a);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t n = 0; n < N; ++n) {
        const float sw = q.granularity == ScaleGranularity::Tensor ? scale_at(q, 0, 0) : scale_at(q, n, 0);
        float& y = o[t * out.stride + n];
        y = y * kE4M3KernelScale * sx[t] * sw + b[n];
      }
    }
    return;
  }
  // Block scales: each block_k slice of K is its own product, scaled by its activation group and
  // weight tile, then summed in float32.
  for (int64_t t = 0; t < T; ++t)
    for (int64_t n = 0; n < N; ++n) o[t * out.stride + n] = b[n];
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t k0 = g * group, kn = std::min(K, k0 + group) - k0;
    a.x = xq + k0;
    a.w = static_cast<const uint8_t*>(w.data) + k0;
    a.K = kn;
    a.out = part;
    a.out_stride = N;
    run_linear(a);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t n = 0; n < N; ++n) {
        const float s = kE4M3KernelScale * sx[t * groups + g] * scale_at(q, n / q.block_n, g);
        o[t * out.stride + n] += part[t * N + n] * s;
      }
    }
  }
}

}  // namespace inferdesk::cpu
