// The wide decode-batch GEMMs on Hopper warpgroup MMAs (sm90a/wide_gemm.cu, built for sm_90a
// only): the SwiGLU form and the k-split form, with WideNorm fused into their epilogues.
#pragma once

#include <cstdint>

#include "cuda/kernels/common.h"
#include "cuda/kernels/launch.h"
#include "cuda/kernels/wide_norm.h"

namespace inferdesk::cuda {

// Whether the current device runs the sm_90a kernels (sm90a/, built for sm_90a alone; the
// definition is sm90a/hopper_available.cu). Their launchers need it; callers fall back otherwise.
bool hopper_kernels_available();

// Token rows the wide GEMMs serve at most (the wgmma M).
constexpr int32_t kWideGemmMaxRows = 64;

// Decode-batch SwiGLU GEMM: y[M, N / 2] = silu(x @ Wg^T) * (x @ Wu^T) where W stacks Wg [N / 2, K]
// over Wu. Every block owns whole output tiles (H gate and H up rows) over the whole K, a single
// wave of blocks on `sms` SMs; deterministic, a row's result independent of M. M <= 64,
// K % 64 == 0, BF16; needs hopper_kernels_available() and wide_gemm_swiglu_supported().
// wide_gemm_swiglu_half: the tile's half width H for that N on `sms` SMs (0: no instantiated width
// gives a grid of 3/4 to 1 wave). norm: the consumer half of a WideNorm (ss_in).
int32_t wide_gemm_swiglu_half(int64_t n, int32_t sms);
bool wide_gemm_swiglu_supported(const Mat& x, const bf16* w, int64_t n, int64_t k, const Mat& y, int32_t sms);
void wide_gemm_swiglu(const Mat& x, const bf16* w, int64_t n, int64_t k, Mat y, int32_t sms, const Launch& launch,
                      const WideNorm* norm = nullptr);
// Decode-batch GEMM y[M, N] = x[M, K] @ W[N, K]^T with each tile's K split over the two blocks of a
// cluster (each block receives the other's sums of one warpgroup's rows in its shared memory and
// finishes those rows): tiles of 2 H = 64 or 96 rows, two 64-k panels per stage, K % 256 == 0, a
// wave of clusters on `sms` SMs; M <= 64, BF16, needs hopper_kernels_available() and
// wide_gemm_ksplit_supported(). wide_gemm_ksplit_half: H for that N (0: none fits).
// norm: either half of a WideNorm (its tiles: wide_gemm_ksplit_tiles(n, sms)).
int32_t wide_gemm_ksplit_half(int64_t n, int32_t sms);
int32_t wide_gemm_ksplit_tiles(int64_t n, int32_t sms);
bool wide_gemm_ksplit_supported(const Mat& x, const bf16* w, int64_t n, int64_t k, const Mat& y, int32_t sms);
void wide_gemm_ksplit(const Mat& x, const bf16* w, int64_t n, int64_t k, Mat y, int32_t sms, const Launch& launch,
                      const WideNorm* norm = nullptr);

}  // namespace inferdesk::cuda
