// The integer-weight kernels compiled for AVX2 + FMA (see int_kernels_impl.inc, int8_avx2.inc).
#include <immintrin.h>
#include <math.h>
#include <cstdint>

#include "core/backend/cpu/int_kernels.h"

namespace inferdesk::cpu {
namespace {
#include "core/backend/cpu/simd_avx2.inc"

// 8 bytes: xor 0x88 turns each signed nibble q into q + 8 in [0, 15]; widened to 32-bit lanes,
// the low nibble is the even column and the high nibble the odd one.
inline void vload_u4(const uint8_t* p, V& lo, V& hi) {
  const __m128i b = _mm_xor_si128(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)), _mm_set1_epi8(char(0x88)));
  const __m256i e = _mm256_cvtepu8_epi32(b);
  lo.v = _mm256_cvtepi32_ps(_mm256_and_si256(e, _mm256_set1_epi32(15)));
  hi.v = _mm256_cvtepi32_ps(_mm256_srli_epi32(e, 4));
}
inline V vload_s8(const uint8_t* p) {
  return {_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))))};
}

#include "core/backend/cpu/int_kernels_impl.inc"
#include "core/backend/cpu/int8_avx2.inc"
}  // namespace

IntKernelTable int_kernels_avx2() { return make_int_table(&int8_rows_avx2, "avx2 maddubs"); }

}  // namespace inferdesk::cpu
