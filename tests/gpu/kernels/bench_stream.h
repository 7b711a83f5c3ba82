// Weight-streaming read kernels of bench_gpu_kernels (bench_stream.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace inferdesk::cuda::bench {

int stream_variants();
const char* stream_variant_name(int v);
// Launches variant v over w [rows, row_bytes] (x: [64, row_bytes] with x_pitch, read beside each
// stage by the "+x64" variants); false when the shape does not divide into the variant's tiles.
bool stream_read(int v, const void* w, int64_t rows, int64_t row_bytes, const void* x, int64_t x_pitch,
                 uint32_t* sink, int sms, cudaStream_t s);

}  // namespace inferdesk::cuda::bench
