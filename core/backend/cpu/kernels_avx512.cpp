// The CPU kernels compiled for avx512 (see kernels_impl.inc).
#include <math.h>
#include <cstdint>
// GCC 12's AVX-512 intrinsics (reductions, conversions) start from _mm512_undefined_*(), which its
// flow analysis reports as uninitialised; the warnings are false positives.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "core/backend/cpu/kernels.h"

namespace inferdesk::cpu {
namespace {
#include "core/backend/cpu/simd_avx512.inc"
#include "core/backend/cpu/kernels_impl.inc"
}  // namespace

KernelTable kernels_avx512() { return make_table(Isa::Avx512); }

}  // namespace inferdesk::cpu
