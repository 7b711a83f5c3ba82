// FP8 linear layers (core/backend/quant.h defines the scheme; the CPU backend's
// cpu_quant_linear.cpp is the reference every kernel here matches): E4M3 weights with per-tensor,
// per-channel or 128 x 128 block scales, and E4M3 activations quantized per token (dynamic), per
// token and 128-wide group (dynamic, with block weights) or by one static scale. Quantizing an
// activation x with scale s: q = sat_e4m3(x * (1 / s)), s = max(amax / 448, kFp8MinActScale);
// products are summed in F32 and scaled by s_x * s_w (per group for block weights).
//
// The kernels (fp8_gemv.cu, fp8_quant.cu, sm90a/fp8_wide_gemm.cu) and which one serves a shape
// (cuda/backend/kernel_policy_fp8.cpp):
// - fp8_gemv: up to 8 rows, the activation quantization fused (memory-bound decode);
// - fp8_quantize then sm90a's fp8_wide_gemm (9-64 rows, wgmma), cuBLASLt (cuda/backend/fp8_gemm.h)
//   or fp8_gemm_simple (any shape, CUDA cores; for what the others do not serve).
#pragma once

#include <cstdint>

#include "cuda/kernels/common.h"
#include "cuda/kernels/launch.h"

namespace inferdesk::cuda {

enum class Fp8Gran : int32_t { Tensor = 0, Channel = 1, Block = 2 };
enum class Fp8Act : int32_t { DynamicToken = 0, DynamicGroup = 1, Static = 2 };

// Block weights: 128 x 128 tiles of one scale each, activations in 128-wide groups (the only block
// shape of published checkpoints: Qwen3-FP8, DeepSeek).
constexpr int32_t kFp8Block = 128;
// quant.h's kFp8MinActScale (kernels do not include core/backend).
constexpr float kFp8MinScale = 1.0f / (448.0f * 512.0f);

// An FP8 weight as the kernels see it.
struct Fp8Weight {
  const uint8_t* data = nullptr;  // [n, k] E4M3, contiguous rows of k bytes
  int64_t n = 0, k = 0;
  Fp8Gran gran = Fp8Gran::Channel;
  const float* scales = nullptr;  // Tensor [1]; Channel [n]; Block [ceil(n / 128)][scale_cols]
  int64_t scale_cols = 0;         // Block: ceil(k / 128)
  Fp8Act act = Fp8Act::DynamicToken;
  float input_scale = 1.0f;  // Static
};

// Quantized activations: q [rows, cols] E4M3 (row stride `stride` bytes, a multiple of 16), and
// their scales [groups][rows] (rows contiguous: the layout cuBLASLt's OUTER_VEC and VEC128 scale
// modes read), groups 1 (per token, static) or ceil(cols / 128) (per group).
struct Fp8X {
  uint8_t* q = nullptr;
  int64_t rows = 0, cols = 0, stride = 0;
  float* scales = nullptr;
  int64_t groups = 1;
};
// Bytes of an Fp8X of rows x cols for weights `w` (q, then the scales 256-byte aligned), and the
// Fp8X laid out at `base`.
int64_t fp8_x_bytes(int64_t rows, int64_t cols, const Fp8Weight& w);
Fp8X fp8_x_at(void* base, int64_t rows, int64_t cols, const Fp8Weight& w);

// x (BF16 [rows, cols], any stride and alignment) quantized as w.act says into `out` (sized by
// fp8_x_bytes for the same shape).
void fp8_quantize(const Mat& x, const Fp8Weight& w, const Fp8X& out, const Launch& launch);

// Up to kFp8GemvMaxRows rows, activation quantization fused: y = x @ W^T (+ bias), x BF16
// [M, K], y BF16 or F32 [M, N], bias BF16 [N] or null. Needs K % 16 == 0 and 16-byte aligned W
// (fp8_gemv_supported).
constexpr int32_t kFp8GemvMaxRows = 8;
// The GEMV's thread-block shape (benchmarks and tests pick it; 0: by shape): 4 or 8 warps, and
// 1 or 2 steps of 128 k a warp loads as a batch. Another value throws Error(Internal).
struct Fp8GemvConfig {
  int warps = 0;
  int unroll = 0;
};
// The shape measured fastest for `w` on a GPU of `sms` SMs (bench_gpu_kernels fp8_gemv_cfg):
// SwiGLU 4 warps; otherwise 4 warps where 8-warp blocks (two an SM) take more than one wave.
Fp8GemvConfig fp8_gemv_config(const Fp8Weight& w, bool swiglu, int sms);
bool fp8_gemv_supported(const Mat& x, const Fp8Weight& w, const Mat& y, bool swiglu);
void fp8_gemv(const Mat& x, const Fp8Weight& w, const bf16* bias, Mat y, const Launch& launch,
              Fp8GemvConfig cfg = {});
// The SwiGLU form: w stacks gate [I, K] over up [I, K] (w.n = 2 I, block weights I % 128 == 0),
// out[m, i] = silu(x . gate_i) * (x . up_i), BF16 [M, I].
void fp8_gemv_swiglu(const Mat& x, const Fp8Weight& w, Mat out, const Launch& launch, Fp8GemvConfig cfg = {});

// Any shape and alignment, CUDA cores (each weight row is read once per 8 rows of x): y = x @ W^T
// (+ bias) from quantized x. y BF16 or F32.
void fp8_gemm_simple(const Fp8X& x, const Fp8Weight& w, const bf16* bias, Mat y, const Launch& launch);

// Random finite E4M3 codes of magnitude <= scale, bit for bit the CPU backend's fill_random of an
// F8E4M3 tensor (the same uniform values, rounded to E4M3 with saturation).
void fill_random_fp8(uint8_t* data, int64_t rows, int64_t cols, int64_t stride, uint64_t seed, float scale,
                     const Launch& launch);
// dst[i] = *src for i < n (a per-tensor scale as a per-channel vector, for cuBLASLt).
void fp8_broadcast_scale(const float* src, float* dst, int64_t n, const Launch& launch);

}  // namespace inferdesk::cuda
