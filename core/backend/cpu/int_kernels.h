// Fast inner loops of QuantScheme::Int linears (core/backend/quant.h), compiled per instruction set
// like kernels.h (int_kernels_avx2.cpp, int_kernels_avx512.cpp from int_kernels_impl.inc, and
// int_kernels_vnni.cpp for AVX-512 VNNI). The scalar backend has none: it runs the reference in
// cpu_int_linear.cpp, which stays the definition these kernels are tested against.
#pragma once

#include <cstdint>

#include "core/backend/cpu/kernels.h"

namespace inferdesk::cpu {

// Columns a weight-only group must be a multiple of for the fast kernels (2 x 16 lanes: one
// 4-bit AVX-512 step); other group sizes and act-order weights take the reference path.
constexpr int64_t kIntGroupAlign = 32;
// Above this many activation rows, weight-only linears dequantize tiles and run the float kernel.
constexpr int64_t kIntGemvMaxRows = 8;

// Activations in the order the kernels read them (int_pack_x): for 4-bit codes, every block of
// 2W columns holds its W even columns then its W odd ones (the low and high nibbles of W bytes);
// columns past the last whole block, and all columns for 8-bit codes, stay in place.
struct IntWeightArgs {
  const float* xp = nullptr;    // [T, K] packed activations, row stride K
  const float* xsum = nullptr;  // [T, G] sum of each group's vector-covered columns (int_pack_x)
  const uint8_t* w = nullptr;   // canonical codes, w_stride bytes per row
  int64_t w_stride = 0;
  const float* scales = nullptr;  // [N, G]
  const float* zeros = nullptr;   // [N, G] or null
  int64_t G = 1, group = 0;       // groups per row and columns per group (K for Channel)
  int32_t bits = 4;
  int64_t K = 0, T = 0;
  const float* bias = nullptr;  // [N] floats
  float* out = nullptr;
  int64_t out_stride = 0;
};

// W8A8: int8 activation rows (qx [T, K], scales sx [T]) against int8 weight rows.
struct Int8Args {
  const int8_t* qx = nullptr;
  const float* sx = nullptr;
  const int8_t* w = nullptr;
  int64_t w_stride = 0;
  const float* sw = nullptr;  // [N] per-channel weight scales
  const float* bias = nullptr;
  float* out = nullptr;
  int64_t out_stride = 0;
  int64_t K = 0, T = 0;
};

struct IntKernelTable {
  bool available = false;  // false: use the reference (scalar backend)
  const char* int8_path = "reference";
  int64_t lanes = 1;  // W: the 4-bit packing block is 2W columns
  // xp and xsum of rows x [T, K] (stride x_stride) for groups of `group` columns.
  void (*pack_x)(const float* x, int64_t x_stride, int64_t T, int64_t K, int32_t bits, int64_t group, float* xp,
                 float* xsum) = nullptr;
  // Weight-only: out rows [n0, n1) for all T (<= kIntGemvMaxRows) activation rows.
  void (*weight_rows)(const IntWeightArgs& a, int64_t n0, int64_t n1) = nullptr;
  // Rows [n0, n0 + rows) as floats, columns in xp's order, `ld` floats apart (prefill tiles).
  void (*dequant_rows)(const IntWeightArgs& a, int64_t n0, int64_t rows, float* out, int64_t ld) = nullptr;
  // W8A8: out rows [n0, n1) for all T rows, exact int32 sums.
  void (*int8_rows)(const Int8Args& a, int64_t n0, int64_t n1) = nullptr;
};

IntKernelTable int_kernels_avx2();
IntKernelTable int_kernels_avx512();
// The AVX-512 VNNI int8 rows (vpdpbusd); valid only where int_vnni_supported().
void int8_rows_vnni(const Int8Args& a, int64_t n0, int64_t n1);
bool int_vnni_supported();
IntKernelTable int_kernels_for(Isa isa);

}  // namespace inferdesk::cpu
