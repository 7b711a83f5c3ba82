// Small-batch GEMV (decode): y[M, N] = x[M, K] @ W[N, K]^T (+ bias) for M <= 8, and the same with
// a SwiGLU epilogue. Memory-bound: the goal is to stream W once at full DRAM bandwidth.
//
// Main path (W 16-byte aligned, K % 8 == 0): tensor-core mma.m16n8k16 (BF16 in, F32 accumulate)
// with W as the 16-row A operand and the (up to 8) x rows as the 8 B columns, so one pass over W
// serves every x row. A thread block owns 16 output rows (32 for SwiGLU: 16 gate + 16 up); its
// kW warps (8, or 4 for a small grid, see kSmallGridWarps) split K in interleaved steps of 32 and
// are reduced through shared memory at the end.
// Since the order of the k terms of a dot product is free, each lane loads whole 16-byte chunks:
// lane (g = lane / 4, t = lane % 4) reads W[row g][k0 + 8t, +8), W[row g + 8][same] and x[g][same],
// and the 8 values of a chunk feed two mmas as the logical k's {2t, 2t+1, 2t+8, 2t+9} of each (the
// same permutation for A and B, so the products pair up correctly). W is read with a streaming
// (L1 no-allocate, 256-byte L2 prefetch) load so x stays cached in L1.
// Fallback (unaligned W or K % 8 != 0): one warp per output row, scalar loads. Correct, not fast.
//
// Programmatic dependent launch (common.cuh): a block lets the next kernel be scheduled at once,
// issues the W loads of its first batch (W is immutable) and an L2 prefetch of its second, and
// only then waits for the previous kernel (which writes x); so a GEMV's weight stream starts while
// its predecessor drains.
#include <algorithm>
#include <cstdint>
#include <string>

#include "cuda/kernels/common.cuh"
#include "cuda/kernels/common.h"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/gemv.h"
#include "cuda/kernels/gemv_tuning.h"
#include "cuda/kernels/kv_fp8.cuh"
#include "cuda/kernels/launch.h"
#include "cuda/kernels/mma_stream.cuh"

namespace inferdesk::cuda {
namespace {

constexpr int kRows = 16;          // output rows per block (per stacked matrix)
constexpr int kStepK = 32;         // k per warp step (4 lanes x 8 elements)
constexpr int kFallbackWarps = 8;  // rows per block of the fallback kernel
// Steps of 32 per batch: each lane loads 2 * kMats * U W chunks of 16 bytes per batch, and with
// the next batch issued before the current one is consumed up to twice that is in flight.
constexpr int kUnrollGemv = 4;
constexpr int kUnrollSwiglu = 2;
// Warps per block of the tensor-core kernel: 8, except for a gemv of at most kSmallGridMaxRows
// output rows, which uses kSmallGridWarps. A 4-warp block needs half the registers (4 blocks per
// SM instead of 2): a 6144-row GEMV (384 blocks) then fits in one wave on 132 SMs instead of 1.45,
// and while a 4096-row one (256 blocks) runs, the SMs keep room for the next kernel's blocks
// (PDL) to be resident and load their first weights. The price: half the loads in flight per
// block. bench_gpu_kernels times both ("gemv ... w4" against "w8"); 8 measured faster up to
// kSmallGridMaxRows rows (docs/PERF.md).
constexpr int kSmallGridWarps = 8;
constexpr int64_t kSmallGridMaxRows = 8192;
constexpr int64_t kTallRows = 16384;  // from here on 4-warp blocks (1,024 blocks and more)
// Before pdl_wait(): also prefetch the second batch's W lines into L2 (keeps DRAM busy while the
// previous kernel drains; a later-wave block only issues a few redundant prefetches).
constexpr bool kPrefetchSecondBatch = true;

// U steps of one warp (kW apart) for kMats stacked matrices: per step and matrix the chunks
// of W rows g and g + 8, and the x chunk of the same k's.
template <int U, int kMats>
struct Batch {
  uint4 a[U][kMats][2];
  uint4 b[U];
};

// The loaders take the batch's first step relative to the warp's first one (wp, xp point there).
// f(u, m, hh, p) for each W chunk p of the batch: step u, matrix m, row g (hh 0) or g + 8 (hh 1).
template <int kW, int U, int kMats, class F>
__device__ __forceinline__ void for_batch_w(const bf16* const (&wp)[kMats][2], int64_t s0, F&& f) {
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t k = (s0 + static_cast<int64_t>(u) * kW) * kStepK;
#pragma unroll
    for (int m = 0; m < kMats; ++m)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) f(u, m, hh, wp[m][hh] + k);
  }
}
template <int kW, bool kPinned = false, int U, int kMats>
__device__ __forceinline__ void load_batch_w(Batch<U, kMats>& bt, const bf16* const (&wp)[kMats][2], int64_t s0) {
  for_batch_w<kW, U, kMats>(wp, s0,
                            [&](int u, int m, int hh, const bf16* p) { bt.a[u][m][hh] = load_w_stream<kPinned>(p); });
}
template <int kW, int U, int kMats>
__device__ __forceinline__ void prefetch_batch_w(const bf16* const (&wp)[kMats][2], int64_t s0) {
  for_batch_w<kW, U, kMats>(wp, s0,
                            [](int, int, int, const bf16* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); });
}
template <int kW, bool kXVec, int U, int kMats>
__device__ __forceinline__ void load_batch_x(Batch<U, kMats>& bt, const bf16* xp, int64_t s0) {
#pragma unroll
  for (int u = 0; u < U; ++u) bt.b[u] = load_bf16x8<kXVec>(xp + (s0 + static_cast<int64_t>(u) * kW) * kStepK);
}
template <int kW, bool kXVec, int U, int kMats>
__device__ __forceinline__ void load_batch(Batch<U, kMats>& bt, const bf16* const (&wp)[kMats][2], const bf16* xp,
                                           int64_t s0) {
  load_batch_w<kW>(bt, wp, s0);
  load_batch_x<kW, kXVec>(bt, xp, s0);
}

template <int U, int kMats>
__device__ __forceinline__ void mma_batch(float (&c)[kMats][4], const Batch<U, kMats>& bt) {
#pragma unroll
  for (int u = 0; u < U; ++u)
#pragma unroll
    for (int m = 0; m < kMats; ++m) mma_chunk(c[m], bt.a[u][m][0], bt.a[u][m][1], bt.b[u]);
}

template <typename TY>
__device__ __forceinline__ void store_y(TY* p, float v) {
  if constexpr (sizeof(TY) == 4)
    *p = v;
  else
    *p = __float2bfloat16(v);
}

// kMats = 1: y = x W^T (+ bias), W [mat_rows, K]. kMats = 2: W stacks gate [mat_rows, K] over up
// [mat_rows, K] and y = silu(x gate^T) * (x up^T), y [M, mat_rows].
// <= 128 registers whatever kW: 2 blocks of 8 warps or 4 of 4 per SM.
// kRope (kMats 1, BF16 y, gemv_qkv_rope): W is the fused q|k|v projection and the epilogue
// applies the rotary embedding to q and k and writes k and v into the KV cache. A block of the q|k
// part serves 8 rotation pairs of one head: its mma rows g are the head's dims 8c + g of the first
// half and rows g + 8 the same dims of the second half, so both values of a pair end in the
// accumulators of one lane. The values are rounded to BF16 before the rotation, as the separate
// GEMV + qk_norm_rope_write_kv do.
template <int kMats, bool kXVec, typename TY, int kW, bool kRope = false>
__global__ void __launch_bounds__(kW * 32, 16 / kW)
    gemv_mma_kernel(const bf16* __restrict__ x, int64_t x_stride, int M, const bf16* __restrict__ w, int64_t mat_rows,
                    int64_t K, const bf16* __restrict__ bias, TY* __restrict__ y, int64_t y_stride, GemvRope rope) {
  constexpr int U = kMats == 1 ? kUnrollGemv : kUnrollSwiglu;
  static_assert(kW == 4 || kW == 8, "the epilogue needs 128 threads, the registers <= 128");
  __shared__ float red[kW][kMats * 4][32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * kRows;
  const int64_t steps = (K + kStepK - 1) / kStepK;
  // The output row of mma row g + 8 hh. kRope: blocks below qk_blocks hold rotation pairs.
  const int64_t pairs_per_head = kRope ? rope.head_dim / 16 : 1;  // blocks per head
  const int64_t qk_blocks = kRope ? int64_t{rope.num_q_heads + rope.num_kv_heads} * pairs_per_head : 0;
  const bool pair_block = kRope && blockIdx.x < qk_blocks;
  const int64_t head = pair_block ? blockIdx.x / pairs_per_head : 0;
  const int64_t pair0 = pair_block ? (blockIdx.x % pairs_per_head) * 8 : 0;
  auto out_row = [&](int gg, int hh) -> int64_t {
    if (pair_block) return head * rope.head_dim + hh * (rope.head_dim / 2) + pair0 + gg;
    return r0 + gg + 8 * hh;
  };

  // Rows past the end (last block) and x rows past M are clamped to valid ones and loaded anyway:
  // C rows and columns are independent, and results for them are never stored. So the main loop
  // has no predicates and a warp issues all its loads of a batch back to back.
  // wp and xp already point at this lane's chunk of the warp's first step (column
  // warp * kStepK + 8t), so the batch loaders take steps relative to it (the first batches'
  // addresses are then base + constant).
  const int64_t col0 = static_cast<int64_t>(warp) * kStepK + 8 * t;
  const bf16* wp[kMats][2];
#pragma unroll
  for (int m = 0; m < kMats; ++m)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) wp[m][hh] = w + (m * mat_rows + min(out_row(g, hh), mat_rows - 1)) * K + col0;
  const bf16* xp = x + min(g, M - 1) * x_stride + col0;

  float c[kMats][4];
#pragma unroll
  for (int m = 0; m < kMats; ++m) c[m][0] = c[m][1] = c[m][2] = c[m][3] = 0.0f;

  // Full batches (U steps of 32, kW apart, all inside K), software-pipelined: the loads of
  // batch j + 1 are issued before the mmas of batch j, so each warp always has a batch in flight.
  const int64_t full_steps = K / kStepK;  // steps whose 4 chunks all lie inside K
  constexpr int64_t kBatch = static_cast<int64_t>(kW) * U;
  const int64_t room = full_steps - warp - static_cast<int64_t>(U - 1) * kW;
  const int64_t batches = room > 0 ? (room + kBatch - 1) / kBatch : 0;
  Batch<U, kMats> p, q;
  // kRope: the epilogue thread's slot, bias values and cos/sin (step metadata and immutable data,
  // readable before pdl_wait()) computed now, so they are ready when the sums are.
  [[maybe_unused]] int32_t rope_slot = -1;
  [[maybe_unused]] float rope_c = 1.0f, rope_s = 0.0f, bias_v = 0.0f, bias_p = 0.0f;
  if constexpr (kRope) {
    const int ei = threadIdx.x >> 5, el = threadIdx.x & 31;
    const int etok = 2 * (el & 3) + (ei & 1);
    if (threadIdx.x < 128 && etok < M) {
      rope_slot = rope.slot_mapping ? rope.slot_mapping[etok] : -1;
      const int64_t erow = out_row(el >> 2, ei >= 2 ? 1 : 0);
      if (bias && erow < mat_rows) bias_v = __bfloat162float(bias[erow]);
      if (pair_block) {
        if (bias) bias_p = __bfloat162float(bias[out_row(el >> 2, ei >= 2 ? 0 : 1)]);
        const float pos = rope.positions ? static_cast<float>(rope.positions[etok]) : 0.0f;
        rope_cos_sin(rope.inv_freq[pair0 + (el >> 2)], pos, rope.attention_scaling, rope_c, rope_s);
      }
    }
  }
  // W of the first batch before waiting for the kernel that produced x; x after.
  if (batches > 0) load_batch_w<kW, true>(p, wp, 0);
  if (kPrefetchSecondBatch && batches > 1) prefetch_batch_w<kW, U, kMats>(wp, kBatch);
  pdl_launch_dependents();
  pdl_wait();
  if (batches > 0) load_batch_x<kW, kXVec>(p, xp, 0);
  for (int64_t j = 0; j < batches; j += 2) {
    if (j + 1 < batches) load_batch<kW, kXVec>(q, wp, xp, (j + 1) * kBatch);
    mma_batch(c, p);
    if (j + 1 >= batches) break;
    if (j + 2 < batches) load_batch<kW, kXVec>(p, wp, xp, (j + 2) * kBatch);
    mma_batch(c, q);
  }
  // Tail: the warp's last steps, one at a time; a chunk past K (K % 32 != 0) contributes zeros.
  // Only the loads are conditional: mma.sync must be executed by the whole warp together.
  for (int64_t s0 = warp + batches * kBatch; s0 < steps; s0 += kW) {
    const int64_t krel = (s0 - warp) * kStepK;  // from the lane's first chunk
    uint4 a[kMats][2], b = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int m = 0; m < kMats; ++m) a[m][0] = a[m][1] = b;
    if (col0 + krel < K) {  // K % 8 == 0: a chunk is whole or absent
#pragma unroll
      for (int m = 0; m < kMats; ++m)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) a[m][hh] = load_w_stream(wp[m][hh] + krel);
      b = load_bf16x8<kXVec>(xp + krel);
    }
#pragma unroll
    for (int m = 0; m < kMats; ++m) mma_chunk(c[m], a[m][0], a[m][1], b);
  }

#pragma unroll
  for (int m = 0; m < kMats; ++m)
#pragma unroll
    for (int i = 0; i < 4; ++i) red[warp][m * 4 + i][lane] = c[m][i];
  __syncthreads();
  // Thread j < 128 finishes accumulator entry (i = j / 32) of lane l = j % 32: C row g (+8 for
  // i >= 2) = output row, C column 2t + (i & 1) = x row.
  if (threadIdx.x >= 128) return;
  const int i = threadIdx.x >> 5, l = threadIdx.x & 31;
  const int64_t row = out_row(l >> 2, i >= 2 ? 1 : 0);
  const int tok = 2 * (l & 3) + (i & 1);
  if (row >= mat_rows || tok >= M) return;
  if constexpr (kRope) {
    static_assert(kMats == 1 && sizeof(TY) == 2, "the rope epilogue is for the BF16 qkv GEMV");
    auto value = [&](int ii, float b) {  // (acc + bias) of entry ii, rounded to BF16
      float sum = 0.0f;
#pragma unroll
      for (int wi = 0; wi < kW; ++wi) sum += red[wi][ii][l];
      return round_bf16(sum + b);
    };
    const float v = value(i, bias_v);
    const int D = rope.head_dim;
    const int32_t slot = rope_slot;
    auto cache_at = [&](int64_t kv_head, int64_t d) {  // [blocks][kv heads][block_size][D]
      return ((slot / rope.block_size * rope.num_kv_heads + kv_head) * rope.block_size + slot % rope.block_size) * D +
             d;
    };
    // An E4M3 cache gets the F32 value (k after the rotation) quantized with the layer's scale.
    auto store_kv = [&](void* cache, int64_t idx, float x, float scale) {
      if (rope.kv.fp8())
        static_cast<uint8_t*>(cache)[idx] = quantize_e4m3(x, 1.0f / scale);
      else
        static_cast<bf16*>(cache)[idx] = __float2bfloat16(x);
    };
    if (pair_block) {
      const float pv = value(i ^ 2, bias_p);
      const float r = rotate_half(v, pv, rope_c, rope_s, /*first=*/i < 2);
      y[tok * y_stride + row] = __float2bfloat16(r);
      if (head >= rope.num_q_heads && slot >= 0)
        store_kv(rope.k_cache, cache_at(head - rope.num_q_heads, row - head * D), r, rope.kv.k_scale);
    } else {
      y[tok * y_stride + row] = __float2bfloat16(v);
      const int64_t vrow = row - qk_blocks * kRows;  // within the v part
      if (slot >= 0) store_kv(rope.v_cache, cache_at(vrow / D, vrow % D), v, rope.kv.v_scale);
    }
  } else {
    float acc[kMats];
#pragma unroll
    for (int m = 0; m < kMats; ++m) {
      float sum = 0.0f;
#pragma unroll
      for (int wi = 0; wi < kW; ++wi) sum += red[wi][m * 4 + i][l];
      acc[m] = sum;
    }
    float v;
    if constexpr (kMats == 1) {
      v = acc[0] + (bias ? __bfloat162float(bias[row]) : 0.0f);
    } else {
      v = silu(acc[0]) * acc[1];
    }
    store_y(y + tok * y_stride + row, v);
  }
}

// Fallback: one warp per output row, any alignment and K.
template <int kMats, typename TY>
__global__ void __launch_bounds__(kFallbackWarps * 32)
    gemv_simple_kernel(const bf16* x, int64_t x_stride, int M, const bf16* w, int64_t mat_rows, int64_t K,
                       const bf16* bias, TY* y, int64_t y_stride) {
  const int lane = threadIdx.x & 31;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kFallbackWarps + (threadIdx.x >> 5);
  pdl_launch_dependents();
  pdl_wait();
  if (row >= mat_rows) return;
  float acc[kMats][kGemvMaxRows];
#pragma unroll
  for (int m = 0; m < kMats; ++m)
#pragma unroll
    for (int r = 0; r < kGemvMaxRows; ++r) acc[m][r] = 0.0f;
  for (int64_t k = lane; k < K; k += 32) {
#pragma unroll
    for (int m = 0; m < kMats; ++m) {
      const float wv = __bfloat162float(w[(m * mat_rows + row) * K + k]);
#pragma unroll
      for (int r = 0; r < kGemvMaxRows; ++r)
        if (r < M) acc[m][r] += wv * __bfloat162float(x[r * x_stride + k]);
    }
  }
#pragma unroll
  for (int r = 0; r < kGemvMaxRows; ++r) {
    if (r >= M) break;
    float s[kMats];
#pragma unroll
    for (int m = 0; m < kMats; ++m) s[m] = warp_sum(acc[m][r]);
    if (lane != 0) continue;
    float v;
    if constexpr (kMats == 1)
      v = s[0] + (bias ? __bfloat162float(bias[row]) : 0.0f);
    else
      v = silu(s[0]) * s[1];
    store_y(y + r * y_stride + row, v);
  }
}

template <int kMats, typename TY, int kW>
void launch_mma(const char* what, bool x_vec, unsigned blocks, const Launch& launch, const bf16* xp, int64_t x_stride,
                int M, const bf16* w, int64_t mat_rows, int64_t k, const bf16* bias, TY* yp, int64_t y_stride) {
  launch_kernel(what, x_vec ? gemv_mma_kernel<kMats, true, TY, kW> : gemv_mma_kernel<kMats, false, TY, kW>,
                dim3(blocks), dim3(kW * 32), 0, launch, xp, x_stride, M, w, mat_rows, k, bias, yp, y_stride,
                GemvRope{});
}

// warps: of the tensor-core kernel, 4 or 8 (0: by shape).
template <int kMats, typename TY>
void launch_gemv(const char* what, const Mat& x, const bf16* w, int64_t mat_rows, int64_t k, const bf16* bias,
                 const Mat& y, int warps, const Launch& launch) {
  const auto* xp = static_cast<const bf16*>(x.data);
  auto* yp = static_cast<TY*>(y.data);
  const int M = static_cast<int>(x.rows);
  const bool w_vec = reinterpret_cast<uintptr_t>(w) % 16 == 0 && k % 8 == 0;
  if (w_vec) {
    const bool x_vec = reinterpret_cast<uintptr_t>(x.data) % 16 == 0 && (M == 1 || x.stride % 8 == 0);
    const auto blocks = static_cast<unsigned>((mat_rows + kRows - 1) / kRows);
    // 4 warps win for very tall matrices (the lm head), 8 for the rest (docs/PERF.md).
    if (warps == 0)
      warps = kMats == 1 && mat_rows >= kTallRows           ? 4
              : kMats == 1 && mat_rows <= kSmallGridMaxRows ? kSmallGridWarps
                                                            : 8;
    if constexpr (kMats == 1) {  // (the SwiGLU GEMV always has 8)
      if (warps == 4)
        return launch_mma<kMats, TY, 4>(what, x_vec, blocks, launch, xp, x.stride, M, w, mat_rows, k, bias, yp,
                                        y.stride);
    }
    launch_mma<kMats, TY, 8>(what, x_vec, blocks, launch, xp, x.stride, M, w, mat_rows, k, bias, yp, y.stride);
  } else {
    const auto blocks = static_cast<unsigned>((mat_rows + kFallbackWarps - 1) / kFallbackWarps);
    launch_kernel(what, gemv_simple_kernel<kMats, TY>, dim3(blocks), dim3(kFallbackWarps * 32), 0, launch, xp, x.stride,
                  M, w, mat_rows, k, bias, yp, y.stride);
  }
}

void check_shapes(const char* what, const Mat& x, int64_t rows_out, int64_t k, const Mat& y) {
  if (x.dt != Dt::BF16) unsupported_config(std::string(what) + ": x must be BF16");
  if (x.rows > kGemvMaxRows)
    unsupported_config(std::string(what) + ": " + std::to_string(x.rows) + " rows (at most " +
                       std::to_string(kGemvMaxRows) + ")");
  if (x.cols != k || y.cols != rows_out || y.rows < x.rows)
    unsupported_config(std::string(what) + ": shapes do not match (x " + std::to_string(x.rows) + "x" +
                       std::to_string(x.cols) + ", k " + std::to_string(k) + ", y " + std::to_string(y.rows) + "x" +
                       std::to_string(y.cols) + ", out " + std::to_string(rows_out) + ")");
}

template <int kMats>
void run_gemv(const char* what, const Mat& x, const bf16* w, int64_t rows_out, int64_t k, const bf16* bias,
              const Mat& y, int warps, const Launch& launch) {
  check_shapes(what, x, rows_out, k, y);
  if (warps != 0 && warps != 4 && warps != 8)
    unsupported_config(std::string(what) + ": " + std::to_string(warps) + " warps per block");
  if (x.rows <= 0 || rows_out <= 0) return;
  if (y.dt == Dt::F32)
    launch_gemv<kMats, float>(what, x, w, rows_out, k, bias, y, warps, launch);
  else
    launch_gemv<kMats, bf16>(what, x, w, rows_out, k, bias, y, warps, launch);
}

}  // namespace

void gemv(const Mat& x, const bf16* w, int64_t n, int64_t k, const bf16* bias, Mat y, const Launch& launch) {
  run_gemv<1>("gemv", x, w, n, k, bias, y, 0, launch);
}

void gemv_with_warps(int warps, const Mat& x, const bf16* w, int64_t n, int64_t k, const bf16* bias, Mat y,
                     const Launch& launch) {
  run_gemv<1>("gemv", x, w, n, k, bias, y, warps, launch);
}

void gemv_swiglu(const Mat& x, const bf16* w_gate_up, int64_t inter, int64_t k, Mat out, const Launch& launch) {
  run_gemv<2>("gemv_swiglu", x, w_gate_up, inter, k, nullptr, out, 0, launch);
}

bool gemv_qkv_rope_supported(const Mat& x, const bf16* w, int64_t k, const Mat& y, const GemvRope& r) {
  const int64_t n = int64_t{r.num_q_heads + 2 * r.num_kv_heads} * r.head_dim;
  const bool aligned = reinterpret_cast<uintptr_t>(w) % 16 == 0 && k % 8 == 0 &&
                       reinterpret_cast<uintptr_t>(x.data) % 16 == 0 && (x.rows == 1 || x.stride % 8 == 0);
  return aligned && x.dt == Dt::BF16 && y.dt == Dt::BF16 && x.rows >= 1 && x.rows <= kGemvMaxRows && x.cols == k &&
         y.cols == n && y.rows >= x.rows && r.head_dim >= 16 && r.head_dim % 16 == 0 && r.num_q_heads > 0 &&
         r.num_kv_heads > 0 && r.inv_freq != nullptr && r.k_cache != nullptr && r.v_cache != nullptr &&
         r.block_size > 0;
}

void gemv_qkv_rope(const Mat& x, const bf16* w, int64_t k, const bf16* bias, Mat y, const GemvRope& r,
                   const Launch& launch) {
  if (!gemv_qkv_rope_supported(x, w, k, y, r))
    unsupported_config("gemv_qkv_rope: shapes, alignment or head_dim " + std::to_string(r.head_dim) + " not supported");
  const int64_t n = y.cols;
  const auto blocks = static_cast<unsigned>(n / kRows);  // head_dim % 16 == 0: exact
  const auto* xp = static_cast<const bf16*>(x.data);
  auto* yp = static_cast<bf16*>(y.data);
  // x rows 16-byte aligned (checked): the vector x loads.
  launch_kernel("gemv_qkv_rope", gemv_mma_kernel<1, true, bf16, 8, true>, dim3(blocks), dim3(8 * 32), 0, launch, xp,
                x.stride, static_cast<int>(x.rows), w, n, k, bias, yp, y.stride, r);
}

}  // namespace inferdesk::cuda
