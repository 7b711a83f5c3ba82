// Helpers shared by the gpu-labelled tests: skip without a GPU, device buffers, poisoning and the
// normalised error used to compare a CUDA kernel with the CPU reference.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda/kernels/launch.h"

namespace inferdesk::gputest {

// How a test launches the kernel under test: on `s` (default: the legacy default stream), with
// programmatic dependent launch requested, as the backend requests it by default
// (CudaBackendOptions::pdl); the PDL tests pass `pdl` to run both ways.
inline cuda::Launch test_launch(cudaStream_t s = nullptr, bool pdl = true) { return cuda::Launch{s, pdl}; }

// Empty when a CUDA device is usable; otherwise why not.
inline std::string no_gpu_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return std::string("no usable CUDA driver: ") + cudaGetErrorString(e);
  if (n == 0) return "no CUDA GPU in this machine";
  return {};
}

#define INFERDESK_REQUIRE_GPU()                                           \
  do {                                                                    \
    const std::string why_ = ::inferdesk::gputest::no_gpu_reason();       \
    if (!why_.empty()) GTEST_SKIP() << "skipped (needs a GPU): " << why_; \
  } while (0)

#define CUDA_OK(expr)                                                      \
  do {                                                                     \
    const cudaError_t e_ = (expr);                                         \
    ASSERT_EQ(e_, cudaSuccess) << #expr << ": " << cudaGetErrorString(e_); \
  } while (0)

// A device buffer of T; filled with a poison byte pattern (0xFF: NaN for float and bf16) so a
// kernel that forgets to write an element is caught.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n) : n_(n) {
    if (n == 0) return;
    if (cudaMalloc(&p_, n * sizeof(T)) != cudaSuccess) throw std::bad_alloc();
    poison();
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() {
    if (p_) cudaFree(p_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), n_(o.n_) {
    o.p_ = nullptr;
    o.n_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    return *this;
  }
  T* get() const { return p_; }
  size_t size() const { return n_; }
  void poison() {
    if (p_) cudaMemset(p_, 0xFF, n_ * sizeof(T));
  }
  void upload(const std::vector<T>& host) {
    if (cudaMemcpy(p_, host.data(), std::min(n_, host.size()) * sizeof(T), cudaMemcpyHostToDevice) != cudaSuccess)
      throw std::runtime_error("cudaMemcpy H2D failed");
  }
  std::vector<T> download() const {
    std::vector<T> h(n_);
    if (n_ && cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost) != cudaSuccess)
      throw std::runtime_error("cudaMemcpy D2H failed");
    return h;
  }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

inline float bf16_to_float(__nv_bfloat16 v) {
  const uint16_t bits = static_cast<__nv_bfloat16_raw>(v).x;
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline __nv_bfloat16 float_to_bf16(float f) {  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t r = u + 0x7FFF + ((u >> 16) & 1);
  __nv_bfloat16_raw raw;
  raw.x = std::isnan(f) ? 0x7FC0 : static_cast<uint16_t>(r >> 16);
  return __nv_bfloat16(raw);
}
inline std::vector<__nv_bfloat16> to_bf16(const std::vector<float>& v) {
  std::vector<__nv_bfloat16> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = float_to_bf16(v[i]);
  return out;
}
inline std::vector<float> to_float(const std::vector<__nv_bfloat16>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = bf16_to_float(v[i]);
  return out;
}
// Values rounded through bf16 (so the CPU reference sees exactly what the GPU sees).
inline std::vector<float> round_bf16(std::vector<float> v) {
  for (float& x : v) x = bf16_to_float(float_to_bf16(x));
  return v;
}
inline std::vector<float> random_vector(size_t n, uint64_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

// ||got - want|| / max(||want||, tiny); NaN anywhere in `got` gives +inf.
inline double normalised_error(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return INFINITY;
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    const double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

}  // namespace inferdesk::gputest
