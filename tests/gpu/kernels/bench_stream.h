// Weight-streaming read kernels of bench_gpu_kernels (bench_stream.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/launch.h"

namespace inferdesk::cuda::bench {

int stream_variants();
const char* stream_variant_name(int v);
// Launches variant v over w [rows, row_bytes] (x: [64, row_bytes] with x_pitch, read beside each
// stage by the "+x64" variants); false when the shape does not divide into the variant's tiles.
bool stream_read(int v, const void* w, int64_t rows, int64_t row_bytes, const void* x, int64_t x_pitch, uint32_t* sink,
                 int sms, const Launch& launch);
// The wide GEMMs' TMA weight stream alone (bench_stream_tma.cu): tiles of rows_per_tile rows, `panels`
// 64-k boxes per stage, K split over `splits` blocks per tile; packed: each block's stage bytes
// contiguous instead of W [n, k] row-major (packed 1), or W row-major read in one 4-D box per stage
// whose rows' panels are requested together (packed 2); mode 0 the bare ring, 1 the GEMMs' consumer/producer
// protocol, 2 that with x [64, k] read beside the weights. False where the shape or device does not fit.
bool stream_tma_read(int mode, int rows_per_tile, int panels, int splits, int packed, const void* w, const void* x,
                     int64_t n, int64_t k, uint32_t* sink, int sms, const Launch& launch);

}  // namespace inferdesk::cuda::bench
