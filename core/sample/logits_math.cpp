#include "core/sample/logits_math.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

namespace inferdesk {
namespace {

// The hot loops get an AVX2 clone picked at load time (GCC function multi-versioning); other
// compilers and targets use the baseline build.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define INFERDESK_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define INFERDESK_VECTOR_CLONES
#endif

constexpr size_t kBlock = 1024;
constexpr size_t kLanes = 16;  // independent accumulators, so reductions vectorise

// Sum of up to kBlock floats in kLanes float accumulators.
inline double block_sum(const float* p, size_t n) {
  float acc[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) acc[j] += p[i + j];
  }
  double s = 0.0;
  for (; i < n; ++i) s += p[i];
  for (float a : acc) s += a;
  return s;
}

// exp(x) for x <= 0: x = n ln2 + r with |r| <= ln2 / 2, e^r by a degree-7 polynomial
// (minimax coefficients of the classic single-precision expf), 2^n assembled in the exponent bits.
// Branch-free so that loops over it vectorise; returns 0 below -87 (and for -inf).
inline float exp_nonpositive(float x) {
  const bool tiny = x < -87.0f;
  x = tiny ? -87.0f : x;
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  float n = (x * kLog2e + kRound) - kRound;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  float out = p * scale;
  return tiny ? 0.0f : out;
}

}  // namespace

INFERDESK_VECTOR_CLONES
float max_value(std::span<const float> v) {
  const float* p = v.data();
  const size_t n = v.size();
  float acc[kLanes];
  std::fill(acc, acc + kLanes, -INFINITY);
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) acc[j] = p[i + j] > acc[j] ? p[i + j] : acc[j];
  }
  float m = -INFINITY;
  for (; i < n; ++i) m = p[i] > m ? p[i] : m;
  for (float a : acc) m = a > m ? a : m;
  return m;
}

INFERDESK_VECTOR_CLONES
bool has_nan(std::span<const float> v) {
  const float* p = v.data();
  const size_t n = v.size();
  int32_t acc[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) acc[j] |= (p[i + j] != p[i + j]);
  }
  int32_t any = 0;
  for (; i < n; ++i) any |= (p[i] != p[i]);
  for (int32_t a : acc) any |= a;
  return any != 0;
}

INFERDESK_VECTOR_CLONES
void exp_shifted(std::span<const float> in, float shift, std::span<float> out) {
  const size_t n = in.size();
  const float* src = in.data();
  float* dst = out.data();
  for (size_t i = 0; i < n; ++i) dst[i] = exp_nonpositive(src[i] - shift);
}

INFERDESK_VECTOR_CLONES
double sum(std::span<const float> v) {
  double total = 0.0;
  for (size_t b = 0; b < v.size(); b += kBlock) {
    total += block_sum(v.data() + b, std::min(kBlock, v.size() - b));
  }
  return total;
}

INFERDESK_VECTOR_CLONES
double log_sum_exp(std::span<const float> v, float mx) {
  float buf[kBlock];
  double total = 0.0;
  for (size_t b = 0; b < v.size(); b += kBlock) {
    const size_t len = std::min(kBlock, v.size() - b);
    exp_shifted(v.subspan(b, len), mx, std::span<float>(buf, len));
    total += block_sum(buf, len);
  }
  return static_cast<double>(mx) + std::log(total);
}

INFERDESK_VECTOR_CLONES
void divide(std::span<float> v, float divisor) {
  float* p = v.data();
  const size_t n = v.size();
  for (size_t i = 0; i < n; ++i) p[i] = p[i] / divisor;
}

INFERDESK_VECTOR_CLONES
void zero_below(std::span<float> w, float floor) {
  float* p = w.data();
  const size_t n = w.size();
  for (size_t i = 0; i < n; ++i) p[i] = p[i] >= floor ? p[i] : 0.0f;
}

INFERDESK_VECTOR_CLONES
void zero_where_less(std::span<const float> v, float threshold, std::span<float> w) {
  const float* a = v.data();
  float* p = w.data();
  const size_t n = w.size();
  for (size_t i = 0; i < n; ++i) p[i] = a[i] >= threshold ? p[i] : 0.0f;
}

INFERDESK_VECTOR_CLONES
double sum_within(std::span<const float> v, std::span<const float> w, float mx, float scale, float limit) {
  double total = 0.0;
  for (size_t b = 0; b < v.size(); b += kBlock) {
    const size_t e = std::min(v.size(), b + kBlock);
    float acc[kLanes] = {};
    size_t i = b;
    for (; i + kLanes <= e; i += kLanes) {
      for (size_t j = 0; j < kLanes; ++j) {
        acc[j] += (mx - v[i + j]) * scale < limit ? w[i + j] : 0.0f;
      }
    }
    for (; i < e; ++i) total += (mx - v[i]) * scale < limit ? w[i] : 0.0f;
    for (float a : acc) total += a;
  }
  return total;
}

INFERDESK_VECTOR_CLONES
void zero_outside(std::span<const float> v, std::span<float> w, float mx, float scale, float limit) {
  const float* a = v.data();
  float* p = w.data();
  const size_t n = w.size();
  for (size_t i = 0; i < n; ++i) p[i] = (mx - a[i]) * scale < limit ? p[i] : 0.0f;
}

INFERDESK_VECTOR_CLONES
size_t count_positive(std::span<const float> w) {
  const float* p = w.data();
  const size_t n = w.size();
  int32_t acc[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) acc[j] += p[i + j] > 0.0f;
  }
  size_t count = 0;
  for (; i < n; ++i) count += p[i] > 0.0f;
  for (int32_t a : acc) count += static_cast<size_t>(a);
  return count;
}

void append_positive(std::span<const float> w, std::vector<int32_t>& out) {
  for (size_t b = 0; b < w.size(); b += kBlock) {
    const size_t e = std::min(w.size(), b + kBlock);
    if (!(max_value(w.subspan(b, e - b)) > 0.0f)) continue;
    for (size_t i = b; i < e; ++i) {
      if (w[i] > 0.0f) out.push_back(static_cast<int32_t>(i));
    }
  }
}

float kth_largest(std::span<const float> v, size_t k) {
  std::vector<float> heap;  // min-heap of the k largest so far
  heap.reserve(k);
  for (size_t b = 0; b < v.size(); b += kBlock) {
    const auto block = v.subspan(b, std::min(kBlock, v.size() - b));
    // Once the heap is full, a block whose maximum does not beat its floor adds nothing.
    if (heap.size() == k && !(max_value(block) > heap.front())) continue;
    for (float x : block) {
      if (heap.size() < k) {
        heap.push_back(x);
        std::push_heap(heap.begin(), heap.end(), std::greater<float>());
      } else if (x > heap.front()) {
        std::pop_heap(heap.begin(), heap.end(), std::greater<float>());
        heap.back() = x;
        std::push_heap(heap.begin(), heap.end(), std::greater<float>());
      }
    }
  }
  return heap.front();
}

size_t argmax(std::span<const float> v) {
  const float m = max_value(v);
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == m) return i;
  }
  return 0;  // only when v holds NaN
}

size_t draw_index(std::span<const float> w, double u01) {
  const size_t n = w.size();
  const size_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> block_sums(blocks);
  double total = 0.0;
  for (size_t b = 0; b < blocks; ++b) {
    block_sums[b] = block_sum(w.data() + b * kBlock, std::min(kBlock, n - b * kBlock));
    total += block_sums[b];
  }
  const double target = u01 * total;
  double acc = 0.0;
  size_t last_positive = n;
  for (size_t b = 0; b < blocks; ++b) {
    if (acc + block_sums[b] <= target && b + 1 < blocks) {
      acc += block_sums[b];
      continue;
    }
    const size_t end = std::min(n, (b + 1) * kBlock);
    for (size_t i = b * kBlock; i < end; ++i) {
      if (w[i] <= 0.0f) continue;
      acc += w[i];
      last_positive = i;
      if (target < acc) return i;
    }
    // Rounding between the block sum and the element sum: keep scanning the next blocks.
  }
  if (last_positive == n) {  // nothing positive at or after the chosen block
    for (size_t i = n; i-- > 0;) {
      if (w[i] > 0.0f) return i;
    }
  }
  return last_positive;
}

}  // namespace inferdesk
