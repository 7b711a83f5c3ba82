// Test harness of the GPU sampler (cuda/kernels/sampling.cu): uploads rows of logits, runs
// sample_rows with per-row parameters and penalty entries built the way the CUDA backend builds
// them, and compares with the CPU Sampler (core/sample). Failures throw std::runtime_error with the
// CUDA error, which GoogleTest reports as a test failure.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/sample/sampler.h"
#include "cuda/kernels/launch.h"
#include "cuda/kernels/sample_row.h"
#include "cuda/kernels/sampling.h"
#include "tests/gpu/gpu_test.h"

namespace inferdesk::gputest {

// One row's request: the CPU sampler's inputs plus the Philox key.
struct RowRequest {
  SamplingParams params;
  std::vector<int32_t> prompt, output;
  uint64_t seed = 0;
  uint64_t counter = 0;
};

struct RowResult {
  int32_t token = 0;
  float logprob = 0.0f;
  std::vector<int32_t> top_ids;  // kMaxTopLogprobs entries as the kernel wrote them
  std::vector<float> top_logprobs;
};

inline void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// Distinct tokens of prompt ∪ output with their count in the output (the penalty entries).
inline void penalty_entries(const RowRequest& r, std::vector<int32_t>& tokens, std::vector<int32_t>& counts) {
  std::map<int32_t, int32_t> c;
  for (int32_t id : r.prompt) c[id] += 0;
  for (int32_t id : r.output) c[id] += 1;
  for (const auto& [id, n] : c) {
    tokens.push_back(id);
    counts.push_back(n);
  }
}

inline cuda::SampleRowDev to_device_params(const RowRequest& r) {
  return cuda::make_sample_row(r.params, r.seed, r.counter);
}

// A batch of rows of logits resident on the GPU (uploaded once), sampled many times with
// different requests. Logits row j starts at offset + j * stride floats of the device buffer.
class GpuBatch {
 public:
  // `padding` fills the floats between rows (NaN by default: never read). A finite padding
  // stands for a padded vocabulary's logits beyond `vocab`, which the sampler must ignore.
  GpuBatch(const std::vector<float>& logits, int32_t rows, int32_t vocab, int64_t stride = 0, int64_t offset = 0,
           float padding = NAN)
      : rows_(rows),
        vocab_(vocab),
        stride_(stride > 0 ? stride : vocab),
        offset_(offset),
        logits_(static_cast<size_t>(offset + stride_ * rows)),
        workspace_(cuda::sample_workspace_bytes(rows, vocab)),
        params_(static_cast<size_t>(rows)),
        token_(static_cast<size_t>(rows)),
        logprob_(static_cast<size_t>(rows)),
        top_ids_(static_cast<size_t>(rows) * cuda::kMaxTopLogprobs),
        top_lp_(static_cast<size_t>(rows) * cuda::kMaxTopLogprobs) {
    if (logits.size() != static_cast<size_t>(rows) * static_cast<size_t>(vocab))
      throw std::runtime_error("GpuBatch: logits size is not rows * vocab");
    std::vector<float> host(logits_.size(), padding);
    for (int32_t r = 0; r < rows; ++r) {
      std::copy_n(logits.begin() + static_cast<int64_t>(r) * vocab, vocab, host.begin() + offset_ + r * stride_);
    }
    logits_.upload(host);
  }

  std::vector<RowResult> run(const std::vector<RowRequest>& reqs, cudaStream_t stream = nullptr) {
    if (reqs.size() != static_cast<size_t>(rows_)) throw std::runtime_error("GpuBatch: row count");
    std::vector<cuda::SampleRowDev> params;
    std::vector<int32_t> tokens, counts;
    for (const RowRequest& r : reqs) {
      cuda::SampleRowDev d = to_device_params(r);
      d.penalty_start = static_cast<int32_t>(tokens.size());
      penalty_entries(r, tokens, counts);
      d.penalty_count = static_cast<int32_t>(tokens.size()) - d.penalty_start;
      params.push_back(d);
    }
    tokens.push_back(0);  // a sentinel no row refers to: the buffers are never empty
    counts.push_back(0);
    params_.upload(params);
    DeviceBuffer<int32_t> d_tokens(tokens), d_counts(counts);
    token_.poison();
    logprob_.poison();
    top_ids_.poison();
    top_lp_.poison();
    workspace_.poison();  // NaN: a penalised row that reads an unwritten copy shows up
    cuda::SampleArgs a;
    a.logits = logits_.get() + offset_;
    a.logits_stride = stride_;
    a.rows = rows_;
    a.vocab = vocab_;
    a.row_params = params_.get();
    a.penalty_tokens = d_tokens.get();
    a.penalty_counts = d_counts.get();
    a.workspace = workspace_.get();
    a.out_token = token_.get();
    a.out_logprob = logprob_.get();
    a.out_top_ids = top_ids_.get();
    a.out_top_logprobs = top_lp_.get();
    cuda::sample_rows(a, test_launch(stream));
    cuda_check(cudaStreamSynchronize(stream), "sample_rows");
    const auto tok = token_.download();
    const auto lp = logprob_.download();
    const auto ids = top_ids_.download();
    const auto tlp = top_lp_.download();
    std::vector<RowResult> out(static_cast<size_t>(rows_));
    for (int32_t r = 0; r < rows_; ++r) {
      RowResult& o = out[static_cast<size_t>(r)];
      o.token = tok[static_cast<size_t>(r)];
      o.logprob = lp[static_cast<size_t>(r)];
      const auto b = static_cast<size_t>(r) * cuda::kMaxTopLogprobs;
      o.top_ids.assign(ids.begin() + b, ids.begin() + b + cuda::kMaxTopLogprobs);
      o.top_logprobs.assign(tlp.begin() + b, tlp.begin() + b + cuda::kMaxTopLogprobs);
    }
    return out;
  }

  int32_t rows() const { return rows_; }

 private:
  int32_t rows_, vocab_;
  int64_t stride_, offset_;
  DeviceBuffer<float> logits_;
  DeviceBuffer<unsigned char> workspace_;
  DeviceBuffer<cuda::SampleRowDev> params_;
  DeviceBuffer<int32_t> token_;
  DeviceBuffer<float> logprob_;
  DeviceBuffer<int32_t> top_ids_;
  DeviceBuffer<float> top_lp_;
};

// log(sum(exp(row))) in double.
inline double log_normaliser(const float* row, size_t n) {
  double mx = -INFINITY;
  for (size_t i = 0; i < n; ++i) mx = std::max(mx, static_cast<double>(row[i]));
  double s = 0.0;
  for (size_t i = 0; i < n; ++i) s += std::exp(static_cast<double>(row[i]) - mx);
  return mx + std::log(s);
}

// Random logits N(0, sd), rounded through bf16 (so values repeat, as real bf16 logits do).
inline std::vector<float> normal_logits(size_t n, float sd, uint64_t seed, float mean = 0.0f) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> d(mean, sd);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return round_bf16(std::move(v));
}

// Upper critical value of chi-square with `dof` degrees of freedom at the standard-normal quantile
// z (Wilson-Hilferty; within 1% of the exact value for dof >= 3, conservative enough below).
inline double chi_square_critical(size_t dof, double z) {
  const double k = static_cast<double>(std::max<size_t>(dof, 1));
  const double a = 2.0 / (9.0 * k);
  return k * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

struct ChiSquare {
  double statistic = 0.0;
  size_t dof = 0;
  double critical = 0.0;
};

// Pearson chi-square of `counts` against `probs` (both over the vocabulary): tokens expected at
// least 5 times are bins of their own, the rest are pooled into one bin (merged into the smallest
// bin when the pool is expected fewer than 5 times). z = 4.75 (p ~ 1e-6 per test): the draws are
// deterministic, so a fixed seed either passes or fails every time; a real bug shifts the
// statistic far beyond this.
inline ChiSquare chi_square(const std::vector<int64_t>& counts, const std::vector<float>& probs, int64_t draws) {
  std::vector<double> expect;
  std::vector<double> seen;
  double pool_e = 0.0, pool_o = 0.0;
  for (size_t i = 0; i < probs.size(); ++i) {
    const double e = static_cast<double>(probs[i]) * static_cast<double>(draws);
    if (e >= 5.0) {
      expect.push_back(e);
      seen.push_back(static_cast<double>(counts[i]));
    } else {
      pool_e += e;
      pool_o += static_cast<double>(counts[i]);
    }
  }
  if (pool_e >= 5.0 || expect.empty()) {
    expect.push_back(pool_e);
    seen.push_back(pool_o);
  } else {
    const size_t j = static_cast<size_t>(std::min_element(expect.begin(), expect.end()) - expect.begin());
    expect[j] += pool_e;
    seen[j] += pool_o;
  }
  ChiSquare c;
  for (size_t i = 0; i < expect.size(); ++i) {
    if (expect[i] > 0.0) c.statistic += (seen[i] - expect[i]) * (seen[i] - expect[i]) / expect[i];
  }
  c.dof = expect.size() > 1 ? expect.size() - 1 : 1;
  c.critical = chi_square_critical(c.dof, 4.75);
  return c;
}

}  // namespace inferdesk::gputest
