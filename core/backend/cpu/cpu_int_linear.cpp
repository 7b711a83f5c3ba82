// CpuBackend's integer linear: the reference definition of QuantScheme::Int (core/backend/quant.h).
// Weight-only schemes dequantize a tile of output rows at a time to float32, (q - z) * s per
// element, and run the float kernel over it; W8A8 quantizes each activation row to int8 and sums
// the int8 products exactly in int32 before applying both scales in float32.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/backend/cpu/cpu_backend_impl.h"
#include "core/util/error.h"

namespace inferdesk::cpu {

namespace {

// Output rows dequantized together: the float kernel's block height.
constexpr int64_t kTileRows = 32;

const float* frow(const Tensor& t, int64_t r) { return static_cast<const float*>(t.data) + r * t.stride; }

int32_t code_at(const uint8_t* row, int32_t bits, int64_t k) {
  if (bits == 8) return static_cast<int8_t>(row[k]);
  const int32_t nib = (k % 2 == 0) ? (row[k / 2] & 0x0f) : (row[k / 2] >> 4);
  return nib >= 8 ? nib - 16 : nib;
}

// Row n of the weight as floats: (q - z) * s of each column's group.
void dequantize_row(const Tensor& w, const QuantInfo& q, int64_t n, int64_t K, float* out) {
  const auto* row = static_cast<const uint8_t*>(w.data) + n * w.stride;
  const float* s = static_cast<const float*>(q.scales) + n * q.scale_cols;
  const float* z = q.has_zero_point ? static_cast<const float*>(q.zeros) + n * q.scale_cols : nullptr;
  const int64_t gs = q.granularity == ScaleGranularity::Group ? q.group_size : K;
  for (int64_t k = 0; k < K; ++k) {
    const int64_t g = q.act_order ? q.g_idx[k] : k / gs;
    out[k] = (static_cast<float>(code_at(row, q.bits, k)) - (z ? z[g] : 0.0f)) * s[g];
  }
}

void check_int_weight(const Tensor& w, const QuantInfo& q, int64_t K) {
  const bool ok_bits = (q.bits == 8 && w.dtype == DType::I8 && w.cols == K) ||
                       (q.bits == 4 && w.dtype == DType::U8 && w.cols == (K + 1) / 2);
  const int64_t groups = q.granularity == ScaleGranularity::Group && q.group_size > 0
                             ? (K + q.group_size - 1) / q.group_size
                             : 1;
  const bool ok_scales = q.scales && q.scale_rows == w.rows &&
                         (q.act_order ? q.scale_cols >= 1 : q.scale_cols == groups) && (!q.has_zero_point || q.zeros) &&
                         (!q.act_order || q.g_idx);
  const bool ok_gran = q.granularity == ScaleGranularity::Channel || q.granularity == ScaleGranularity::Group;
  if (!ok_bits || !ok_scales || !ok_gran)
    throw Error(ErrorCode::Internal, "int linear: a " + std::to_string(w.rows) + " x " + std::to_string(w.cols) + " " +
                                         dtype_name(w.dtype) + " weight does not hold " + describe(q) + " of " +
                                         std::to_string(K) + " input features");
}

}  // namespace

void CpuBackend::int_linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor out) {
  const QuantInfo& q = *w.quant;
  const int64_t T = x.rows, K = x.cols, N = w.rows;
  check_int_weight(w, q, K);
  const bool int8_act = q.act == ActQuant::DynamicToken;
  // One scratch area: the bias as floats, then (W8A8) the row scales and the int8 rows.
  float* b = scratch_quant_.floats(N + (int8_act ? T + (T * K + 3) / 4 : 0));
  if (bias && !bias->empty())
    k_.convert_row(bias->data, bias->dtype, b, N);
  else
    std::fill(b, b + N, 0.0f);
  float* o = static_cast<float*>(out.data);
  if (int8_act) {
    int8_linear(x, w, b, b + N, out);
    return;
  }
  if (q.act != ActQuant::None)
    throw Error(ErrorCode::Unsupported, "CPU backend: integer weights with " + describe(q) + " are not supported");
  if (int_fast_path(q)) {
    int_weight_fast(x, w, b, out);
    return;
  }
  const int64_t tiles = (N + kTileRows - 1) / kTileRows;
  for_rows(tiles, kTileRows * K * (T + 4), [&](int64_t t0, int64_t t1) {
    std::vector<float> tile(static_cast<size_t>(kTileRows * K));
    for (int64_t tile_i = t0; tile_i < t1; ++tile_i) {
      const int64_t n0 = tile_i * kTileRows, rows = std::min(kTileRows, N - n0);
      for (int64_t r = 0; r < rows; ++r) dequantize_row(w, q, n0 + r, K, tile.data() + r * K);
      LinearArgs a;
      a.x = static_cast<const float*>(x.data);
      a.x_stride = x.stride;
      a.w = tile.data();
      a.w_dtype = DType::F32;
      a.w_stride = K;
      a.bias = b + n0;
      a.out = o + n0;
      a.out_stride = out.stride;
      a.T = T;
      a.K = K;
      a.O = rows;
      k_.linear(a, 0, rows);
    }
  });
}

void CpuBackend::int8_linear(const Tensor& x, const Tensor& w, const float* bias, float* work, Tensor out) {
  const QuantInfo& q = *w.quant;
  const int64_t T = x.rows, K = x.cols, N = w.rows;
  if (q.bits != 8 || q.granularity != ScaleGranularity::Channel || q.has_zero_point || q.act_order)
    throw Error(ErrorCode::Unsupported,
                "CPU backend: int8 activations need symmetric per-channel int8 weights, not " + describe(q));
  // Each row: s_x = max(amax / 127, floor), qx = clamp(rne(x / s_x), -128, 127), as int8.
  float* sx = work;
  auto* qx = reinterpret_cast<int8_t*>(sx + T);
  for (int64_t t = 0; t < T; ++t) {
    const float* xr = frow(x, t);
    float amax = 0.0f;
    for (int64_t k = 0; k < K; ++k) amax = std::max(amax, std::fabs(xr[k]));
    const float s = std::max(amax / 127.0f, kInt8MinActScale);
    sx[t] = s;
    for (int64_t k = 0; k < K; ++k)
      qx[t * K + k] = static_cast<int8_t>(std::clamp(std::nearbyint(xr[k] / s), -128.0f, 127.0f));
  }
  const float* sw = static_cast<const float*>(q.scales);
  float* o = static_cast<float*>(out.data);
  if (ik_.available) {  // the same codes and scales, int32 sums in another order: the same result
    Int8Args a;
    a.qx = qx;
    a.sx = sx;
    a.w = static_cast<const int8_t*>(w.data);
    a.w_stride = w.stride;
    a.sw = sw;
    a.bias = bias;
    a.out = o;
    a.out_stride = out.stride;
    a.K = K;
    a.T = T;
    int8_rows_fast(a, N);
    return;
  }
  for_rows(N, K * T, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      const auto* wr = static_cast<const int8_t*>(w.data) + n * w.stride;
      for (int64_t t = 0; t < T; ++t) {
        const int8_t* xr = qx + t * K;
        int32_t acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += static_cast<int32_t>(xr[k]) * static_cast<int32_t>(wr[k]);
        o[t * out.stride + n] = static_cast<float>(acc) * (sx[t] * sw[n]) + bias[n];
      }
    }
  });
}

}  // namespace inferdesk::cpu
