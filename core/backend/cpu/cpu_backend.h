// The CPU backend: the reference implementation of Backend (core/backend/backend.h).
//
// Activations are float32; weights are read in place (F32, F16 or BF16) and widened inside the
// kernels. Kernels exist for AVX-512, AVX2+FMA and plain C++; the best one the CPU supports is
// picked at construction unless CpuBackendOptions::isa asks for another (tests use that to check
// every path on one machine).
#pragma once

#include <memory>

#include "core/backend/backend.h"

namespace inferdesk {

enum class CpuIsa { Auto, Scalar, Avx2, Avx512 };

struct CpuBackendOptions {
  int num_threads = 0;        // <= 0: one per hardware thread
  CpuIsa isa = CpuIsa::Auto;  // an ISA the CPU lacks is an Error(Unsupported)
};

// make_cpu_backend(int num_threads = 0) is declared in backend.h.
std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions& options);

// Whether this CPU (and this build) can run the given kernels.
bool cpu_isa_supported(CpuIsa isa);

}  // namespace inferdesk
