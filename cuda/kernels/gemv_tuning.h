// GEMV with an explicit thread-block configuration, for benchmarks and tests (the engine calls
// gemv() of gemv.h, which picks the configuration per shape).
#pragma once

#include "cuda/kernels/common.h"
#include "cuda/kernels/gemv.h"
#include "cuda/kernels/launch.h"

namespace inferdesk::cuda {

// gemv() whose tensor-core kernel runs `warps` warps per thread block (4 or 8; 0: as gemv()).
// Throws Error(Internal) for another count. The fallback kernel (unaligned W, K % 8 != 0) is
// unaffected.
void gemv_with_warps(int warps, const Mat& x, const bf16* w, int64_t n, int64_t k, const bf16* bias, Mat y,
                     const Launch& launch);

}  // namespace inferdesk::cuda
