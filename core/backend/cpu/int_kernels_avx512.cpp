// The integer-weight kernels compiled for AVX-512 (see int_kernels_impl.inc). W8A8 takes the
// VNNI kernel (int_kernels_vnni.cpp) where the CPU has it, else the AVX2 one.
#include <math.h>
#include <cstdint>
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(): false uninitialised warnings.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "core/backend/cpu/int_kernels.h"

namespace inferdesk::cpu {
namespace {
#include "core/backend/cpu/simd_avx512.inc"

// 16 bytes of nibbles: q + 8 of the even columns in lo, of the odd ones in hi (see the AVX2 file).
inline void vload_u4(const uint8_t* p, V& lo, V& hi) {
  const __m128i b = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), _mm_set1_epi8(char(0x88)));
  const __m512i e = _mm512_cvtepu8_epi32(b);
  lo.v = _mm512_cvtepi32_ps(_mm512_and_si512(e, _mm512_set1_epi32(15)));
  hi.v = _mm512_cvtepi32_ps(_mm512_srli_epi32(e, 4));
}
inline V vload_s8(const uint8_t* p) {
  return {_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))))};
}

#include "core/backend/cpu/int_kernels_impl.inc"
#include "core/backend/cpu/int8_avx2.inc"
}  // namespace

IntKernelTable int_kernels_avx512() {
  if (int_vnni_supported()) return make_int_table(&int8_rows_vnni, "avx512 vnni");
  return make_int_table(&int8_rows_avx2, "avx2 maddubs");
}

}  // namespace inferdesk::cpu
