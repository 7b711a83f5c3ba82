// The MoE expert kernels' lines of bench_gpu_kernels (bench_moe.cpp): the small-batch and grouped
// paths, FP8 beside BF16, on Qwen3-30B-A3B's and Mixtral-8x7B's expert shapes.
#pragma once

#include "cuda/kernels/launch.h"

namespace inferdesk::benchutil {

void bench_moe(const cuda::Launch& l, const char* filter);

}  // namespace inferdesk::benchutil
