// CpuBackend: mixture-of-experts routing and expert evaluation.
//
// moe_experts groups the step's tokens by expert, so each chosen expert's three matrices are read
// once per step whatever the number of tokens routed to it; each expert then runs as three
// threaded linears over its gathered rows.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/backend/cpu/cpu_backend_impl.h"
#include "core/util/error.h"

namespace inferdesk::cpu {

namespace {
float* frow(const Tensor& t, int64_t r) { return static_cast<float*>(t.data) + r * t.stride; }
int32_t* irow(const Tensor& t, int64_t r) { return static_cast<int32_t*>(t.data) + r * t.stride; }

LinearArgs make_args(const float* x, int64_t x_stride, int64_t T, const Tensor& w, float* out) {
  LinearArgs a;
  a.x = x;
  a.x_stride = x_stride;
  a.w = w.data;
  a.w_dtype = w.dtype;
  a.w_stride = w.stride;
  a.out = out;
  a.out_stride = w.rows;
  a.T = T;
  a.K = w.cols;
  a.O = w.rows;
  return a;
}
}  // namespace

void CpuBackend::expert_linear(const float* x, int64_t x_stride, int64_t n, const Tensor& w, float* out) {
  if (!w.quant) {
    run_linear(make_args(x, x_stride, n, w, out));
    return;
  }
  const Tensor xt{const_cast<float*>(x), DType::F32, n, w.in_features(), x_stride};
  quant_linear(xt, w, nullptr, Tensor{out, DType::F32, n, w.rows, w.rows});
}

void CpuBackend::moe_route(const Tensor& logits, int32_t top_k, bool normalize, Tensor ids, Tensor weights) {
  const int64_t E = logits.cols;
  if (top_k <= 0 || top_k > E || ids.cols != top_k || weights.cols != top_k || ids.dtype != DType::I32 ||
      weights.dtype != DType::F32)
    throw Error(ErrorCode::Internal,
                "moe_route: top_k " + std::to_string(top_k) + " does not fit " + std::to_string(E) + " experts");
  std::vector<float> prob(static_cast<size_t>(E));
  std::vector<int32_t> order(static_cast<size_t>(E));
  for (int64_t t = 0; t < logits.rows; ++t) {
    const float* l = frow(logits, t);
    float mx = -INFINITY;
    for (int64_t e = 0; e < E; ++e) mx = std::max(mx, l[e]);
    float sum = 0.0f;
    for (int64_t e = 0; e < E; ++e) {
      // A NaN logit (a broken checkpoint) gets probability 0 so the ordering below stays valid.
      prob[e] = std::isnan(l[e]) ? 0.0f : std::exp(l[e] - mx);
      sum += prob[e];
    }
    for (int64_t e = 0; e < E; ++e) prob[e] = sum > 0.0f ? prob[e] / sum : 0.0f;
    for (int64_t e = 0; e < E; ++e) order[e] = static_cast<int32_t>(e);
    // Largest first; equal probabilities keep the lower expert id first.
    std::partial_sort(order.begin(), order.begin() + top_k, order.end(),
                      [&](int32_t a, int32_t b) { return prob[a] > prob[b] || (prob[a] == prob[b] && a < b); });
    float chosen = 0.0f;
    for (int32_t j = 0; j < top_k; ++j) chosen += prob[order[j]];
    int32_t* id = irow(ids, t);
    float* w = frow(weights, t);
    for (int32_t j = 0; j < top_k; ++j) {
      id[j] = order[j];
      w[j] = normalize ? prob[order[j]] / chosen : prob[order[j]];
    }
  }
}

void CpuBackend::init_expert_counters(int32_t num_layers, int32_t num_experts) {
  if (num_layers < 0 || num_experts < 0) throw Error(ErrorCode::InvalidArgument, "init_expert_counters: negative size");
  counter_layers_ = num_layers;
  counter_experts_ = num_experts;
  expert_counts_.assign(static_cast<size_t>(num_layers) * num_experts, 0);
}

std::vector<int64_t> CpuBackend::expert_counts() { return expert_counts_; }

void CpuBackend::moe_experts(int32_t layer, const Tensor& x, const std::vector<ExpertWeights>& experts,
                             const Tensor& ids, const Tensor& weights, Tensor out) {
  const int64_t T = x.rows, H = x.cols, k = ids.cols;
  const int64_t E = static_cast<int64_t>(experts.size());
  if (ids.rows != T || weights.rows != T || weights.cols != k || out.rows != T || out.cols != H)
    throw Error(ErrorCode::Internal, "moe_experts: shapes do not match");
  // Bucket (token, slot) pairs by expert, in token order.
  std::vector<int64_t> start(static_cast<size_t>(E + 1), 0);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t j = 0; j < k; ++j) {
      const int32_t e = irow(ids, t)[j];
      if (e < 0 || e >= E)
        throw Error(ErrorCode::Internal, "moe_experts: expert id " + std::to_string(e) + " out of range");
      ++start[e + 1];
    }
  }
  for (int64_t e = 0; e < E; ++e) start[e + 1] += start[e];
  std::vector<int64_t> fill(start.begin(), start.end() - 1);
  std::vector<int64_t> tok(static_cast<size_t>(T * k));
  std::vector<float> wgt(static_cast<size_t>(T * k));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t j = 0; j < k; ++j) {
      const int32_t e = irow(ids, t)[j];
      tok[fill[e]] = t;
      wgt[fill[e]++] = frow(weights, t)[j];
    }
  }
  if (layer >= 0 && layer < counter_layers_ && E <= counter_experts_) {
    for (int64_t e = 0; e < E; ++e)
      expert_counts_[static_cast<size_t>(layer) * counter_experts_ + e] += start[e + 1] - start[e];
  }
  for (int64_t t = 0; t < T; ++t) std::memset(frow(out, t), 0, static_cast<size_t>(H) * 4);

  int64_t max_n = 0, max_inter = 0;
  for (int64_t e = 0; e < E; ++e) {
    max_n = std::max(max_n, start[e + 1] - start[e]);
    if (start[e + 1] > start[e]) max_inter = std::max(max_inter, experts[e].gate.rows);
  }
  if (max_n == 0) return;
  float* xs = scratch_moe_.floats(max_n * (2 * H + 2 * max_inter));
  float* gate = xs + max_n * H;
  float* up = gate + max_n * max_inter;
  float* down = up + max_n * max_inter;
  for (int64_t e = 0; e < E; ++e) {
    const int64_t n = start[e + 1] - start[e];
    if (n == 0) continue;
    const ExpertWeights& ew = experts[e];
    const int64_t I = ew.gate.rows;
    if (ew.gate.in_features() != H || ew.up.rows != I || ew.up.in_features() != H || ew.down.rows != H ||
        ew.down.in_features() != I)
      throw Error(ErrorCode::Internal, "moe_experts: expert " + std::to_string(e) + " has inconsistent weight shapes");
    for (int64_t i = 0; i < n; ++i) std::memcpy(xs + i * H, frow(x, tok[start[e] + i]), static_cast<size_t>(H) * 4);
    expert_linear(xs, H, n, ew.gate, gate);
    expert_linear(xs, H, n, ew.up, up);
    for_rows(n, I * 4, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) k_.silu_mul_row(gate + r * I, up + r * I, gate + r * I, I);
    });
    expert_linear(gate, I, n, ew.down, down);
    for (int64_t i = 0; i < n; ++i) k_.axpy_row(wgt[start[e] + i], down + i * H, frow(out, tok[start[e] + i]), H);
  }
}

}  // namespace inferdesk::cpu
