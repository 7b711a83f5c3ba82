// Vectorisable kernels over one row of logits (the sampler's O(V) passes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace inferdesk {

// Largest value; NaN is ignored (check with has_nan first).
float max_value(std::span<const float> v);
bool has_nan(std::span<const float> v);

// out[i] = exp(in[i] - shift) for in[i] - shift <= 0; 0 for -inf (and anything below -87).
// Relative error about 2e-7 (a polynomial exp, written so that the compiler vectorises it).
void exp_shifted(std::span<const float> in, float shift, std::span<float> out);

// log(sum(exp(v))) given max_value(v) == mx (finite).
double log_sum_exp(std::span<const float> v, float mx);

// Sum in double over float blocks.
double sum(std::span<const float> v);

// v[i] /= divisor.
void divide(std::span<float> v, float divisor);

// w[i] = 0 where w[i] < floor.
void zero_below(std::span<float> w, float floor);
// w[i] = 0 where v[i] < threshold.
void zero_where_less(std::span<const float> v, float threshold, std::span<float> w);

// Band predicate used by top-p: token i is "within band `limit`" when
// (mx - v[i]) * scale < limit (monotone in v[i], nested in limit).
// Sum of w[i] over tokens within the band.
double sum_within(std::span<const float> v, std::span<const float> w, float mx, float scale, float limit);
// w[i] = 0 for tokens outside the band.
void zero_outside(std::span<const float> v, std::span<float> w, float mx, float scale, float limit);

// Number of w[i] > 0.
size_t count_positive(std::span<const float> w);
// Appends the indices i with w[i] > 0, in increasing order (skips all-zero blocks quickly).
void append_positive(std::span<const float> w, std::vector<int32_t>& out);

// The k-th largest value of v (k >= 1, counting duplicates, k <= v.size()).
float kth_largest(std::span<const float> v, size_t k);

// Index of the first value equal to the maximum (the lowest id wins ties). v must not be empty.
size_t argmax(std::span<const float> v);

// Inverse-CDF draw: the index i where the running sum of the non-negative weights w first
// exceeds u01 * sum(w); never an index of weight 0. u01 in [0, 1); sum(w) must be > 0.
size_t draw_index(std::span<const float> w, double u01);

}  // namespace inferdesk
