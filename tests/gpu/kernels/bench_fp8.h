// The FP8 linear kernels' lines of bench_gpu_kernels (bench_fp8.cpp): the GEMV, the wide wgmma GEMMs
// with their activation quantization, cuBLASLt FP8 against cuBLASLt BF16, and an FP8 decode layer.
#pragma once

#include "cuda/kernels/launch.h"

namespace inferdesk::benchutil {

void bench_fp8(const cuda::Launch& l, const char* filter);

}  // namespace inferdesk::benchutil
