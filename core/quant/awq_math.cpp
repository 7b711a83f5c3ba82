#include "core/quant/awq_math.h"

#include <algorithm>
#include <cmath>

#include "core/util/dtype.h"
#include "core/util/error.h"

namespace inferdesk {
namespace {

struct GroupParams {
  float scale;  // an F16 value
  int32_t zero;  // unsigned, 0..15
};

GroupParams group_params(const float* w, int32_t n) {
  float lo = w[0], hi = w[0];
  for (int32_t i = 1; i < n; ++i) {
    lo = std::min(lo, w[i]);
    hi = std::max(hi, w[i]);
  }
  // Rounded to F16 first: the folder keeps F16 scales and the codes must match the stored scale.
  float s = f16_to_f32(f32_to_f16(std::max(hi - lo, 1e-5f) / 15.0f));
  if (!(s > 0.0f)) s = f16_to_f32(f32_to_f16(1e-5f));
  const float z = std::clamp(std::nearbyint(-lo / s), 0.0f, 15.0f);
  return {s, static_cast<int32_t>(z)};
}

int32_t code_of(float w, const GroupParams& p) {
  return static_cast<int32_t>(std::clamp(std::nearbyint(w / p.scale) + static_cast<float>(p.zero), 0.0f, 15.0f));
}

void check_group(const Matrix& w, int32_t group) {
  if (group <= 0 || w.cols % group != 0)
    throw Error(ErrorCode::InvalidArgument, "AWQ group size " + std::to_string(group) + " does not divide " +
                                                std::to_string(w.cols) + " input features");
}

// out [T, N] = x [T, K] @ d^T, d [N, K]; returns sum of squares of out.
double sum_sq_product(const Matrix& x, const Matrix& d) {
  double total = 0;
  for (int64_t t = 0; t < x.rows; ++t) {
    const float* xr = x.v.data() + t * x.cols;
    for (int64_t n = 0; n < d.rows; ++n) {
      const float* dr = d.v.data() + n * d.cols;
      float acc = 0;
      for (int64_t k = 0; k < x.cols; ++k) acc += xr[k] * dr[k];
      total += static_cast<double>(acc) * acc;
    }
  }
  return total;
}

// Quantization error of w scaled by s per column: Q(w * s) / s - w, stacked over ws.
Matrix scaled_error(const std::vector<const Matrix*>& ws, const std::vector<float>& s, int32_t group) {
  Matrix d;
  d.cols = ws[0]->cols;
  for (const Matrix* w : ws) d.rows += w->rows;
  d.v.reserve(static_cast<size_t>(d.rows * d.cols));
  for (const Matrix* w : ws) {
    Matrix ws_scaled = *w;
    for (int64_t r = 0; r < w->rows; ++r)
      for (int64_t k = 0; k < w->cols; ++k) ws_scaled.at(r, k) *= s[static_cast<size_t>(k)];
    const Matrix q = awq_pseudo_quantize(ws_scaled, group);
    for (int64_t r = 0; r < w->rows; ++r)
      for (int64_t k = 0; k < w->cols; ++k) d.v.push_back(q.at(r, k) / s[static_cast<size_t>(k)] - w->at(r, k));
  }
  return d;
}

// Per input channel: mean over rows of |w| relative to the row-group's max |w|.
std::vector<float> weight_mean(const std::vector<const Matrix*>& ws, int32_t group) {
  const int64_t K = ws[0]->cols;
  std::vector<double> sum(static_cast<size_t>(K), 0.0);
  int64_t rows = 0;
  for (const Matrix* w : ws) {
    for (int64_t r = 0; r < w->rows; ++r)
      for (int64_t g = 0; g < K; g += group) {
        float mx = 0;
        for (int64_t k = g; k < g + group; ++k) mx = std::max(mx, std::fabs(w->at(r, k)));
        for (int64_t k = g; k < g + group; ++k) sum[static_cast<size_t>(k)] += std::fabs(w->at(r, k)) / (mx + 1e-6f);
      }
    rows += w->rows;
  }
  std::vector<float> out(static_cast<size_t>(K));
  for (int64_t k = 0; k < K; ++k) out[static_cast<size_t>(k)] = static_cast<float>(sum[static_cast<size_t>(k)] / rows);
  return out;
}

std::vector<float> grid_scales(const std::vector<float>& x_mean, const std::vector<float>& w_mean, double ratio,
                               bool duo) {
  std::vector<float> s(x_mean.size());
  for (size_t k = 0; k < s.size(); ++k) {
    double v = std::pow(static_cast<double>(x_mean[k]), ratio);
    if (duo) v /= std::pow(static_cast<double>(w_mean[k]), 1.0 - ratio) + 1e-4;
    s[k] = static_cast<float>(std::max(v, 1e-4));
  }
  const auto [mn, mx] = std::minmax_element(s.begin(), s.end());
  const float norm = std::sqrt(*mn * *mx);
  for (float& v : s) {
    v /= norm;
    if (!std::isfinite(v) || v <= 0.0f) v = 1.0f;  // a degenerate channel keeps its weights
  }
  return s;
}

}  // namespace

HostIntWeight awq_quantize(const Matrix& w, int32_t group) {
  check_group(w, group);
  const int64_t N = w.rows, K = w.cols, G = K / group;
  HostIntWeight h;
  h.rows = N;
  h.scheme.scheme = QuantScheme::Int;
  h.scheme.bits = 4;
  h.scheme.in_features = K;
  h.scheme.granularity = ScaleGranularity::Group;
  h.scheme.group_size = group;
  h.scheme.has_zero_point = true;
  h.codes.assign(static_cast<size_t>(N * h.code_cols()), 0);
  h.scales = HostScales{std::vector<float>(static_cast<size_t>(N * G)), N, G};
  h.zeros.assign(static_cast<size_t>(N * G), 0.0f);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g) {
      const float* row = w.v.data() + n * K + g * group;
      const GroupParams p = group_params(row, group);
      h.scales.values[static_cast<size_t>(n * G + g)] = p.scale;
      h.zeros[static_cast<size_t>(n * G + g)] = static_cast<float>(p.zero - 8);
      for (int32_t i = 0; i < group; ++i) h.set_code(n, g * group + i, code_of(row[i], p) - 8);
    }
  return h;
}

Matrix awq_pseudo_quantize(const Matrix& w, int32_t group) {
  check_group(w, group);
  Matrix out = w;
  for (int64_t n = 0; n < w.rows; ++n)
    for (int64_t g = 0; g < w.cols; g += group) {
      float* row = out.v.data() + n * w.cols + g;
      const GroupParams p = group_params(row, group);
      for (int32_t i = 0; i < group; ++i) row[i] = static_cast<float>(code_of(row[i], p) - p.zero) * p.scale;
    }
  return out;
}

double output_mse(const Matrix& x, const Matrix& a, const Matrix& b) {
  Matrix d = a;
  for (size_t i = 0; i < d.v.size(); ++i) d.v[i] -= b.v[i];
  return sum_sq_product(x, d) / static_cast<double>(x.rows * a.rows);
}

ScaleSearchResult search_awq_scales(const Matrix& x, const std::vector<const Matrix*>& ws,
                                    const ScaleSearchOptions& options) {
  if (ws.empty() || x.rows == 0) throw Error(ErrorCode::InvalidArgument, "AWQ scale search: no weights or inputs");
  const int64_t K = x.cols;
  for (const Matrix* w : ws) {
    if (w->cols != K) throw Error(ErrorCode::Internal, "AWQ scale search: input and weight widths differ");
    check_group(*w, options.group);
  }
  std::vector<double> acc(static_cast<size_t>(K), 0.0);
  for (int64_t t = 0; t < x.rows; ++t)
    for (int64_t k = 0; k < K; ++k) acc[static_cast<size_t>(k)] += std::fabs(x.at(t, k));
  std::vector<float> x_mean(static_cast<size_t>(K));
  for (int64_t k = 0; k < K; ++k) x_mean[static_cast<size_t>(k)] = static_cast<float>(acc[static_cast<size_t>(k)] / x.rows);
  const std::vector<float> w_mean = weight_mean(ws, options.group);
  int64_t outputs = 0;
  for (const Matrix* w : ws) outputs += w->rows;
  const double denom = static_cast<double>(x.rows * outputs);

  ScaleSearchResult best;
  best.loss = INFINITY;
  const std::vector<float> ones(static_cast<size_t>(K), 1.0f);
  best.loss_unscaled = sum_sq_product(x, scaled_error(ws, ones, options.group)) / denom;
  for (int32_t i = 0; i < options.n_grid; ++i) {
    const double ratio = static_cast<double>(i) / options.n_grid;
    std::vector<float> s = grid_scales(x_mean, w_mean, ratio, options.duo_scaling);
    const double loss = sum_sq_product(x, scaled_error(ws, s, options.group)) / denom;
    if (loss < best.loss) {
      best.loss = loss;
      best.ratio = ratio;
      best.scales = std::move(s);
    }
  }
  if (!std::isfinite(best.loss)) throw Error(ErrorCode::Internal, "AWQ scale search: no finite loss");
  return best;
}

}  // namespace inferdesk
