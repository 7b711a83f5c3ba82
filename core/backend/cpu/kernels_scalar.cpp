// The CPU kernels compiled for scalar (see kernels_impl.inc).
#include <math.h>
#include <cstdint>

#include "core/backend/cpu/kernels.h"

namespace inferdesk::cpu {
namespace {
#include "core/backend/cpu/simd_scalar.inc"
#include "core/backend/cpu/kernels_impl.inc"
}  // namespace

KernelTable kernels_scalar() { return make_table(Isa::Scalar); }

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
  }
  return "?";
}

Isa detect_isa() {
#if defined(__x86_64__) && defined(INFERDESK_CPU_HAVE_X86_KERNELS)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq"))
    return Isa::Avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::Avx2;
#endif
  return Isa::Scalar;
}

KernelTable kernels_for(Isa isa) {
#if defined(INFERDESK_CPU_HAVE_X86_KERNELS)
  if (isa == Isa::Avx512) return kernels_avx512();
  if (isa == Isa::Avx2) return kernels_avx2();
#endif
  return kernels_scalar();
}

}  // namespace inferdesk::cpu
