// The arithmetic of AWQ (activation-aware weight quantization), independent of any model:
// asymmetric int4 group quantization with zero points (what an AWQ `gemm` folder stores) and the
// search for per-input-channel scales that make it lose the least on calibration inputs.
//
// For a weight w [N, K] and group g of `group` input columns: lo = min(w), hi = max(w) over the
// group's row slice, s = max(hi - lo, 1e-5) / 15 rounded to F16 (the folder stores F16 scales, so
// the codes are made with the scale the reader will see), z = clamp(round(-lo / s), 0, 15),
// u = clamp(round(w / s) + z, 0, 15), and w' = (u - z) * s.
//
// The scale search (learned from AutoAWQ's _search_best_scale; written here from its description):
// x_mean[k] = mean |x[t, k]| over the captured input rows; w_mean[k] = mean over rows of |w| / the
// row-group's max |w|; for ratio r in {0, 1/n, ..., (n-1)/n}, s = x_mean^r / (w_mean^(1-r) + 1e-4)
// (or x_mean^r without the weight term), clamped to >= 1e-4 and divided by sqrt(max(s) * min(s));
// the loss is the mean squared difference of x @ (Q(w * s) / s)^T from x @ w^T over every output of
// the linears that share the input; the lowest loss wins. (AutoAWQ measures the output of the
// whole attention / MLP block; we measure the linears' own outputs.)
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/io/int_weights.h"

namespace inferdesk {

// A dense F32 matrix, row-major.
struct Matrix {
  std::vector<float> v;
  int64_t rows = 0, cols = 0;
  float& at(int64_t r, int64_t c) { return v[static_cast<size_t>(r * cols + c)]; }
  float at(int64_t r, int64_t c) const { return v[static_cast<size_t>(r * cols + c)]; }
};

inline constexpr int32_t kAwqGroup = 128;

// w [N, K] quantized as above to the canonical layout (int_weights.h: signed codes u - 8, zeros
// z - 8, F32 scales that are F16 values). K must be a multiple of `group` (InvalidArgument).
HostIntWeight awq_quantize(const Matrix& w, int32_t group = kAwqGroup);
// The same weight after quantizing and dequantizing (w').
Matrix awq_pseudo_quantize(const Matrix& w, int32_t group = kAwqGroup);

struct ScaleSearchOptions {
  int32_t n_grid = 20;
  bool duo_scaling = true;  // the weight-magnitude term of s (AutoAWQ's default)
  int32_t group = kAwqGroup;
};

struct ScaleSearchResult {
  std::vector<float> scales;  // [K]; all 1 when ratio 0 won with equal x_mean (no-op)
  double ratio = 0;           // the winning grid point
  double loss = 0;            // its mean squared output error
  double loss_unscaled = 0;   // the error of plain quantization (s = 1)
};

// x [T, K] the captured inputs, ws the linears [N_i, K] that read them.
ScaleSearchResult search_awq_scales(const Matrix& x, const std::vector<const Matrix*>& ws,
                                    const ScaleSearchOptions& options = {});

// Mean squared difference of x @ a^T from x @ b^T (a, b [N, K]).
double output_mse(const Matrix& x, const Matrix& a, const Matrix& b);

}  // namespace inferdesk
