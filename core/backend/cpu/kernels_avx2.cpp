// The CPU kernels compiled for avx2 (see kernels_impl.inc).
#include <immintrin.h>
#include <math.h>
#include <cstdint>

#include "core/backend/cpu/kernels.h"

namespace inferdesk::cpu {
namespace {
#include "core/backend/cpu/simd_avx2.inc"
#include "core/backend/cpu/kernels_impl.inc"
}  // namespace

KernelTable kernels_avx2() { return make_table(Isa::Avx2); }

}  // namespace inferdesk::cpu
