// Helpers shared by the CPU backend tests: random data, weights in every dtype kept on the host
// (the backend reads them in place), NaN-poisoned outputs and a normalised error measure.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/backend/cpu/cpu_backend.h"
#include "core/util/dtype.h"
#include "core/util/host_tensor.h"

namespace inferdesk::test {

struct BackendCase {
  CpuIsa isa;
  int threads;
};

inline std::string case_name(const testing::TestParamInfo<BackendCase>& info) {
  const char* isa = info.param.isa == CpuIsa::Scalar ? "scalar" : info.param.isa == CpuIsa::Avx2 ? "avx2" : "avx512";
  return std::string(isa) + "_t" + std::to_string(info.param.threads);
}

inline std::vector<BackendCase> all_cases() {
  return {{CpuIsa::Scalar, 1}, {CpuIsa::Avx2, 2}, {CpuIsa::Avx512, 1}, {CpuIsa::Avx512, 2}};
}

class CpuBackendTest : public testing::TestWithParam<BackendCase> {
 protected:
  void SetUp() override {
    if (!cpu_isa_supported(GetParam().isa)) GTEST_SKIP() << "ISA not supported on this CPU";
    CpuBackendOptions o;
    o.isa = GetParam().isa;
    o.num_threads = GetParam().threads;
    be = make_cpu_backend(o);
  }
  std::unique_ptr<Backend> be;
  std::mt19937_64 rng{12345};
};

inline std::vector<double> random_values(std::mt19937_64& rng, size_t n, double scale = 1.0) {
  std::uniform_real_distribution<double> d(-scale, scale);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Round a double to what `dtype` can hold and back.
inline double round_to(DType dt, double v) {
  switch (dt) {
    case DType::BF16: return bf16_to_f32(f32_to_bf16(static_cast<float>(v)));
    case DType::F16: return f16_to_f32(f32_to_f16(static_cast<float>(v)));
    default: return static_cast<float>(v);
  }
}

// A weight held in host memory in `dtype`, with its exact values (after rounding) as doubles.
struct HostWeight {
  std::vector<uint8_t> bytes;
  HostTensor host;
  std::vector<double> values;
  Buffer buf;
};

// `offset` shifts the data by that many bytes (a misaligned tensor inside an mmapped file).
inline std::unique_ptr<HostWeight> make_weight(Backend& be, DType dt, int64_t rows, int64_t cols,
                                               const std::vector<double>& v, size_t offset = 0) {
  auto w = std::make_unique<HostWeight>();
  const size_t n = static_cast<size_t>(rows * cols);
  w->bytes.resize(n * dtype_size(dt) + offset);
  w->values.resize(n);
  for (size_t i = 0; i < n; ++i) {
    w->values[i] = round_to(dt, v[i]);
    if (dt == DType::F32) {
      float f = static_cast<float>(v[i]);
      std::memcpy(&w->bytes[offset + i * 4], &f, 4);
    } else {
      uint16_t h = dt == DType::BF16 ? f32_to_bf16(static_cast<float>(v[i])) : f32_to_f16(static_cast<float>(v[i]));
      std::memcpy(&w->bytes[offset + i * 2], &h, 2);
    }
  }
  w->host.name = "test.weight";
  w->host.dtype = dt;
  w->host.shape = {rows, cols};
  w->host.data = reinterpret_cast<const std::byte*>(w->bytes.data() + offset);
  w->host.nbytes = w->bytes.size() - offset;
  w->buf = be.load_weight(w->host, rows, cols);
  return w;
}

// An F32 activation tensor filled with `v` (rounded to float); returns the rounded values.
inline std::vector<double> set_f32(Tensor t, const std::vector<double>& v) {
  std::vector<double> r(v.size());
  for (int64_t i = 0; i < t.rows; ++i)
    for (int64_t j = 0; j < t.cols; ++j) {
      float f = static_cast<float>(v[i * t.cols + j]);
      static_cast<float*>(t.data)[i * t.stride + j] = f;
      r[i * t.cols + j] = f;
    }
  return r;
}

inline void poison(Tensor t) {
  for (int64_t i = 0; i < t.rows; ++i)
    for (int64_t j = 0; j < t.cols; ++j)
      static_cast<float*>(t.data)[i * t.stride + j] = std::numeric_limits<float>::quiet_NaN();
}

inline std::vector<double> get_f32(Backend& be, const Tensor& t) {
  std::vector<float> f(static_cast<size_t>(t.rows * t.cols));
  be.to_host(t, f.data());
  return std::vector<double>(f.begin(), f.end());
}

// sqrt(sum (a-b)^2 / sum b^2); +inf when a holds a NaN or the sizes differ.
inline double nerr(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return std::numeric_limits<double>::infinity();
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / (den > 0 ? den : 1.0));
}

// linear() of weight `w` [N, K] on random x [T, K] (values within x_scale) with, when `with_bias`,
// a random BF16 bias; the normalised error against reference(x, bias or nullptr).
template <typename Ref>
double linear_error(Backend& be, std::mt19937_64& rng, const Tensor& w, int64_t T, int64_t K, int64_t N, bool with_bias,
                    double x_scale, Ref reference) {
  auto b = make_weight(be, DType::BF16, 1, N, random_values(rng, N, 0.1));
  Buffer xb = be.alloc(DType::F32, T, K), ob = be.alloc(DType::F32, T, N);
  const std::vector<double> xv = set_f32(xb.tensor(), random_values(rng, T * K, x_scale));
  poison(ob.tensor());
  Tensor bias = b->buf.tensor();
  be.linear(xb.tensor(), w, with_bias ? &bias : nullptr, ob.tensor());
  return nerr(get_f32(be, ob.tensor()), reference(xv, with_bias ? &b->values : nullptr));
}

// E experts of [I, H] gate and up and [H, I] down weights made by make(rows, cols) (each with a
// Buffer `buf`), kept alive in `keep`: gate, up, down of expert e at keep[3e .. 3e+2].
template <typename W, typename Make>
std::vector<ExpertWeights> make_experts(int64_t E, int64_t H, int64_t I, std::vector<std::unique_ptr<W>>& keep,
                                        Make make) {
  std::vector<ExpertWeights> experts;
  for (int64_t e = 0; e < E; ++e) {
    keep.push_back(make(I, H));
    keep.push_back(make(I, H));
    keep.push_back(make(H, I));
    experts.push_back({keep[3 * e]->buf.tensor(), keep[3 * e + 1]->buf.tensor(), keep[3 * e + 2]->buf.tensor()});
  }
  return experts;
}

// The inputs of moe_experts for T tokens of H features: random x, and token t routed to experts
// (t + j) % E with weight route_weights[j].
struct MoeInputs {
  Buffer x, ids, weights, out;
  std::vector<double> xv;
};
inline MoeInputs moe_inputs(Backend& be, std::mt19937_64& rng, int64_t T, int64_t H, int64_t E,
                            const std::vector<float>& route_weights) {
  const auto k = static_cast<int64_t>(route_weights.size());
  MoeInputs m{be.alloc(DType::F32, T, H),
              be.alloc(DType::I32, T, k),
              be.alloc(DType::F32, T, k),
              be.alloc(DType::F32, T, H),
              {}};
  m.xv = set_f32(m.x.tensor(), random_values(rng, T * H));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < k; ++j) {
      static_cast<int32_t*>(m.ids.tensor().data)[t * k + j] = static_cast<int32_t>((t + j) % E);
      static_cast<float*>(m.weights.tensor().data)[t * k + j] = route_weights[j];
    }
  return m;
}

}  // namespace inferdesk::test
