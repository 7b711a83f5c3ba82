// FP8 experts, the grouped path (moe_fp8.h: moe_fp8_experts_grouped), and the row quantization the
// grouped and large paths share (moe_fp8_quantize).
//
// The grouped kernels follow moe_grouped.cu with E4M3 operands: block (16-row tile, expert e) reads
// e's pair range from the sort's offsets, exits when it is empty, and walks the pairs in passes of
// 32 (four MMA groups of 8 columns), so e's weights are streamed once per 32 of its pairs. The B
// operand is read already quantized (x once per token, act once per pair: a row is needed by every
// tile of its expert, so quantizing it in each block would repeat the work 16 rows at a time).
// A warp step covers 128 k (lane (g, t): 16 bytes at k0 + 16 t and k0 + 64 + 16 t of W rows g and
// g + 8 and of its group's token row), the 4 warps take steps in turn with the next step's W loads
// in flight, and are reduced through shared memory in a fixed order: the same inputs give the same
// bits whatever the other pairs of the step. Block weights: a step is one 128-k group, its products
// summed apart and added scaled by that group's s_x * s_w, as the CPU reference does.
#include <cstdint>
#include <string>

#include "cuda/kernels/common.cuh"
#include "cuda/kernels/common.h"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/fp8_common.cuh"
#include "cuda/kernels/moe_fp8.cuh"
#include "cuda/kernels/moe_fp8.h"

namespace inferdesk::cuda {
namespace {

constexpr int kTileRows = 16;
constexpr int kGroup = 8;
constexpr int kGroups = 4;
constexpr int kPassTokens = kGroup * kGroups;
constexpr int kStepK = 128;
constexpr int kWarps = 4;

__host__ __device__ __forceinline__ int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct GroupedK {
  Fp8X in;           // quantized rows: x by token (gate/up) or act by sorted position (down)
  bool in_by_order;  // row of sorted position s: order[s] / top_k, else s
  const int32_t* order;
  int32_t top_k;
  const int32_t* offsets;
  MoeFp8Table tbl;
  int32_t mat0;
  int64_t rows, k, scale_cols;
  float* out;  // [max_pairs, rows], sorted order
};

template <int kMats>
struct WStep {
  uint4 a[kMats][2][2];  // [matrix][row g / g + 8][k half]
  float sw[kMats];
};

template <int kMats, bool kBlock>
__device__ __forceinline__ void load_w(WStep<kMats>& w, const uint8_t* const (&wp)[kMats][2],
                                       const float* const (&sp)[kMats], const GroupedK& a, int64_t step, int64_t col0,
                                       int64_t sw_row) {
  const int64_t k0 = step * kStepK;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const bool in = col0 + k0 + 64 * h < a.k;  // K % 16 == 0: a chunk is whole or absent
#pragma unroll
    for (int m = 0; m < kMats; ++m)
#pragma unroll
      for (int r = 0; r < 2; ++r) w.a[m][r][h] = in ? load_fp8_stream(wp[m][r] + k0 + 64 * h) : make_uint4(0, 0, 0, 0);
  }
  if constexpr (kBlock) {
#pragma unroll
    for (int m = 0; m < kMats; ++m) w.sw[m] = __ldg(sp[m] + sw_row * a.scale_cols + step);
  }
}

// The step's MMAs for every active group. Block weights: cs[q][c] are the activation rows of this
// lane's two C columns (2t, 2t + 1) of group q, whose group scales multiply the step's sums.
template <int kMats, bool kBlock>
__device__ __forceinline__ void mma_step(float (&c)[kMats][kGroups][4], const WStep<kMats>& w,
                                         const uint8_t* const (&xp)[kGroups], const int32_t (&cs)[kGroups][2],
                                         const GroupedK& a, int64_t step, int64_t col0, int groups) {
  const int64_t k0 = step * kStepK;
#pragma unroll
  for (int q = 0; q < kGroups; ++q) {
    if (q >= groups) break;
    uint4 b[2];
#pragma unroll
    for (int h = 0; h < 2; ++h)
      b[h] = col0 + k0 + 64 * h < a.k ? *reinterpret_cast<const uint4*>(xp[q] + k0 + 64 * h) : make_uint4(0, 0, 0, 0);
    if constexpr (kBlock) {
      const float s0 = a.in.scales[step * a.in.rows + cs[q][0]], s1 = a.in.scales[step * a.in.rows + cs[q][1]];
#pragma unroll
      for (int m = 0; m < kMats; ++m) {
        float p[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        mma_e4m3_chunk(p, w.a[m][0][0], w.a[m][1][0], b[0]);
        mma_e4m3_chunk(p, w.a[m][0][1], w.a[m][1][1], b[1]);
        const float f0 = s0 * w.sw[m], f1 = s1 * w.sw[m];
        c[m][q][0] += p[0] * f0;
        c[m][q][1] += p[1] * f1;
        c[m][q][2] += p[2] * f0;
        c[m][q][3] += p[3] * f1;
      }
    } else {
#pragma unroll
      for (int m = 0; m < kMats; ++m) {
        mma_e4m3_chunk(c[m][q], w.a[m][0][0], w.a[m][1][0], b[0]);
        mma_e4m3_chunk(c[m][q], w.a[m][0][1], w.a[m][1][1], b[1]);
      }
    }
  }
}

__device__ __forceinline__ int32_t in_row(const GroupedK& a, int32_t s) {
  return a.in_by_order ? a.order[s] / a.top_k : s;
}

// Entry (q, i, l) of the accumulators: output row r0 + l / 4 (+ 8 for i >= 2), pair 8 q + 2 (l % 4)
// + (i & 1) of the pass; 128 threads, 4 entries each.
template <int kMats, bool kBlock>
__device__ __forceinline__ void finish_pass(const GroupedK& a, const float (&red)[kWarps][kMats * kGroups * 4][32],
                                            const float* const (&sp)[kMats], int64_t r0, int32_t pass, int n) {
#pragma unroll
  for (int rep = 0; rep < kGroups * 4 * 32 / (kWarps * 32); ++rep) {
    const int idx = rep * kWarps * 32 + static_cast<int>(threadIdx.x);
    const int q = idx >> 7, i = (idx >> 5) & 3, l = idx & 31;
    const int64_t row = r0 + (l >> 2) + (i >= 2 ? 8 : 0);
    const int tok = q * kGroup + 2 * (l & 3) + (i & 1);
    if (row >= a.rows || tok >= n) continue;
    float acc[kMats];
#pragma unroll
    for (int m = 0; m < kMats; ++m) {
      float sum = 0.0f;
#pragma unroll
      for (int wi = 0; wi < kWarps; ++wi) sum += red[wi][(m * kGroups + q) * 4 + i][l];
      if constexpr (!kBlock)
        sum *= a.in.scales[in_row(a, pass + tok)] * row_scale(sp[m], a.tbl.per_row[a.mat0 + m], row);
      acc[m] = sum;
    }
    a.out[static_cast<int64_t>(pass + tok) * a.rows + row] = kMats == 2 ? silu(acc[0]) * acc[kMats - 1] : acc[0];
  }
}

// kMats 2: gate/up (silu(gate) * up into act), 2 blocks per SM; 1: down (into y), 3 per SM: no spills.
template <int kMats, bool kBlock>
__global__ void __launch_bounds__(kWarps * 32, kMats == 2 ? 2 : 3) moe_fp8_grouped_kernel(const GroupedK a) {
  __shared__ float red[kWarps][kMats * kGroups * 4][32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int32_t e = blockIdx.y, E = a.tbl.num_experts;
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * kTileRows;
  pdl_launch_dependents();
  pdl_wait();
  const int32_t begin = a.offsets[e], end = a.offsets[e + 1];
  if (begin >= end) return;  // no pair routed to e (block-uniform)
  const int64_t col0 = 16 * t;
  const uint8_t* wp[kMats][2];
  const float* sp[kMats];
#pragma unroll
  for (int m = 0; m < kMats; ++m) {
    const uint8_t* base = a.tbl.w[(a.mat0 + m) * E + e];
    sp[m] = a.tbl.s[(a.mat0 + m) * E + e];
#pragma unroll
    for (int r = 0; r < 2; ++r) wp[m][r] = base + min(r0 + g + 8 * r, a.rows - 1) * a.k + col0;
  }
  const int64_t sw_row = r0 / kFp8Block;
  const int64_t steps = ceil_div(a.k, kStepK);

  for (int32_t pass = begin; pass < end; pass += kPassTokens) {
    const int n = min(end - pass, kPassTokens);
    const int groups = (n + kGroup - 1) / kGroup;
    // Pair slots past the expert's count are clamped to its last pair (computed, never stored).
    const uint8_t* xp[kGroups];
    int32_t cs[kGroups][2];
#pragma unroll
    for (int q = 0; q < kGroups; ++q) {
      xp[q] = a.in.q + static_cast<int64_t>(in_row(a, min(pass + q * kGroup + g, end - 1))) * a.in.stride + col0;
      if constexpr (kBlock) {
        cs[q][0] = in_row(a, min(pass + q * kGroup + 2 * t, end - 1));
        cs[q][1] = in_row(a, min(pass + q * kGroup + 2 * t + 1, end - 1));
      } else {
        cs[q][0] = cs[q][1] = 0;
      }
    }
    float c[kMats][kGroups][4];
#pragma unroll
    for (int m = 0; m < kMats; ++m)
#pragma unroll
      for (int q = 0; q < kGroups; ++q) c[m][q][0] = c[m][q][1] = c[m][q][2] = c[m][q][3] = 0.0f;
    WStep<kMats> cur, nxt;
    if (warp < steps) load_w<kMats, kBlock>(cur, wp, sp, a, warp, col0, sw_row);
    for (int64_t s = warp; s < steps; s += kWarps) {
      const bool more = s + kWarps < steps;
      if (more) load_w<kMats, kBlock>(nxt, wp, sp, a, s + kWarps, col0, sw_row);
      mma_step<kMats, kBlock>(c, cur, xp, cs, a, s, col0, groups);
      if (more) cur = nxt;
    }
#pragma unroll
    for (int m = 0; m < kMats; ++m)
#pragma unroll
      for (int q = 0; q < kGroups; ++q)
#pragma unroll
        for (int i = 0; i < 4; ++i) red[warp][(m * kGroups + q) * 4 + i][lane] = c[m][q][i];
    __syncthreads();
    finish_pass<kMats, kBlock>(a, red, sp, r0, pass, n);
    __syncthreads();  // red is rewritten by the next pass
  }
}

// ------------------------------------------------------------------------- quantization

constexpr int kQuantThreads = 256;
constexpr int kRegChunks = 8;  // chunks of 8 a thread keeps between the amax and the codes (16,384 columns)

// The 8 values of columns c0 .. c0 + 8 of source row r (zeros past cols).
__device__ __forceinline__ void quant_load8(const MoeFp8QuantArgs& a, int64_t r, int64_t c0, bool vec, float (&v)[8]) {
  const int64_t cols = a.out.cols;
  if (a.src_f32) {
    const float* row = static_cast<const float*>(a.src) + r * a.src_stride;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int64_t c = c0 + i;
      const float gv = c < cols ? row[c] : 0.0f;
      v[i] = a.swiglu ? (c < cols ? silu(gv) * row[a.up_offset + c] : 0.0f) : gv;
    }
    return;
  }
  const bf16* row = static_cast<const bf16*>(a.src) + r * a.src_stride;
  if (vec && c0 + 8 <= cols) {
    unpack_bf16x8(*reinterpret_cast<const uint4*>(row + c0), v);
    return;
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) v[i] = c0 + i < cols ? __bfloat162float(row[c0 + i]) : 0.0f;
}

__device__ __forceinline__ void quant_store8(const MoeFp8QuantArgs& a, uint8_t* qr, int64_t c0, const float (&v)[8],
                                             float inv) {
  const uint2 q = make_uint2(fp8_quant4(v[0], v[1], v[2], v[3], inv), fp8_quant4(v[4], v[5], v[6], v[7], inv));
  if (c0 + 8 <= a.out.cols) {
    *reinterpret_cast<uint2*>(qr + c0) = q;  // the stride is a multiple of 16
  } else {
    const uint32_t w[2] = {q.x, q.y};
    for (int i = 0; c0 + i < a.out.cols; ++i) qr[c0 + i] = static_cast<uint8_t>(w[i / 4] >> (8 * (i % 4)));
  }
}

// Where the scale of (row r, group gi) goes: [groups][rows], or the segment's own block.
__device__ __forceinline__ int64_t scale_index(const MoeFp8QuantArgs& a, int64_t r, int64_t gi) {
  if (!a.segments) return gi * a.out.rows + r;
  int32_t lo = 0, hi = a.num_segments - 1;  // the last segment whose offset is <= r (non-empty)
  while (lo < hi) {
    const int32_t mid = (lo + hi + 1) / 2;
    if (a.segments[mid] <= r)
      lo = mid;
    else
      hi = mid - 1;
  }
  const int64_t off = a.segments[lo], n = a.segments[lo + 1] - off;
  return moe_fp8_segment_scales(off, lo, a.out.groups) + gi * n + (r - off);
}

// Block r: row r. Per row: the amax over the row, then the codes (the values kept in registers up
// to 16,384 columns, recomputed past that). Per group: 16 consecutive threads hold a group's 128
// values.
__global__ void __launch_bounds__(kQuantThreads) moe_fp8_quantize_kernel(const MoeFp8QuantArgs a, bool vec) {
  __shared__ float red[kQuantThreads / 32];
  const int64_t r = blockIdx.x;
  pdl_launch_dependents();
  pdl_wait();
  if (a.count && r >= *a.count) return;
  const int64_t src_row = a.order ? a.order[r] / a.top_k : r;
  uint8_t* qr = a.out.q + r * a.out.stride;
  const int64_t cols = a.out.cols, span = 8 * kQuantThreads;
  const int64_t rounds = ceil_div(cols, span);  // uniform over the block
  if (a.group) {
    for (int64_t i = 0; i < rounds; ++i) {
      const int64_t c0 = i * span + 8 * threadIdx.x;
      float v[8];
      quant_load8(a, src_row, c0, vec, v);
      float mx = 0.0f;
#pragma unroll
      for (int e = 0; e < 8; ++e) mx = fmaxf(mx, fabsf(v[e]));
#pragma unroll
      for (int o = 8; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
      const float s = fp8_dynamic_scale(mx);
      const int64_t gi = c0 / kFp8Block;
      if (c0 < cols) {
        if (threadIdx.x % 16 == 0) a.out.scales[scale_index(a, r, gi)] = s;
        quant_store8(a, qr, c0, v, 1.0f / s);
      }
    }
    return;
  }
  float mx = 0.0f;
  float keep[kRegChunks][8];
#pragma unroll
  for (int i = 0; i < kRegChunks; ++i) {
    if (i >= rounds) break;
    quant_load8(a, src_row, i * span + 8 * threadIdx.x, vec, keep[i]);
#pragma unroll
    for (int e = 0; e < 8; ++e) mx = fmaxf(mx, fabsf(keep[i][e]));
  }
  for (int64_t i = kRegChunks; i < rounds; ++i) {
    float v[8];
    quant_load8(a, src_row, i * span + 8 * threadIdx.x, vec, v);
#pragma unroll
    for (int e = 0; e < 8; ++e) mx = fmaxf(mx, fabsf(v[e]));
  }
  mx = warp_max(mx);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = mx;
  __syncthreads();
  mx = 0.0f;
  for (int w = 0; w < kQuantThreads / 32; ++w) mx = fmaxf(mx, red[w]);
  const float s = fp8_dynamic_scale(mx);
  if (threadIdx.x == 0) a.out.scales[scale_index(a, r, 0)] = s;
  const float inv = 1.0f / s;
#pragma unroll
  for (int i = 0; i < kRegChunks; ++i) {
    const int64_t c0 = i * span + 8 * threadIdx.x;
    if (i >= rounds) break;
    if (c0 < cols) quant_store8(a, qr, c0, keep[i], inv);
  }
  for (int64_t i = kRegChunks; i < rounds; ++i) {
    const int64_t c0 = i * span + 8 * threadIdx.x;
    if (c0 >= cols) break;
    float v[8];
    quant_load8(a, src_row, c0, vec, v);
    quant_store8(a, qr, c0, v, inv);
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <int kMats>
void launch_grouped(const GroupedK& k, const Launch& launch) {
  const dim3 grid(static_cast<unsigned>(ceil_div(k.rows, kTileRows)), static_cast<unsigned>(k.tbl.num_experts));
  launch_kernel(kMats == 2 ? "moe_fp8_grouped_gate_up" : "moe_fp8_grouped_down",
                k.tbl.block ? moe_fp8_grouped_kernel<kMats, true> : moe_fp8_grouped_kernel<kMats, false>, grid,
                dim3(kWarps * 32), 0, launch, k);
}

}  // namespace

int64_t moe_fp8_x_bytes(int64_t rows, int64_t cols, bool group) {
  const int64_t q = rows * ceil_div(cols, 16) * 16;
  return ceil_div(q, 256) * 256 + rows * (group ? ceil_div(cols, kFp8Block) : 1) * 4;
}

Fp8X moe_fp8_x_at(void* base, int64_t rows, int64_t cols, bool group) {
  Fp8X x;
  x.q = static_cast<uint8_t*>(base);
  x.rows = rows;
  x.cols = cols;
  x.stride = ceil_div(cols, 16) * 16;
  x.groups = group ? ceil_div(cols, kFp8Block) : 1;
  x.scales = reinterpret_cast<float*>(x.q + ceil_div(rows * x.stride, 256) * 256);
  return x;
}

void moe_fp8_quantize(const MoeFp8QuantArgs& a, const Launch& launch) {
  if (a.out.stride % 16 != 0 || a.out.groups != (a.group ? ceil_div(a.out.cols, kFp8Block) : 1) ||
      (a.swiglu && !a.src_f32) || (a.segments && a.num_segments <= 0))
    unsupported_config("moe_fp8_quantize: layout or source not supported");
  if (a.out.rows <= 0 || a.out.cols <= 0) return;
  const size_t es = a.src_f32 ? 4 : 2;
  const bool vec = aligned16(a.src) && (a.src_stride * static_cast<int64_t>(es)) % 16 == 0;
  launch_kernel("moe_fp8_quantize", moe_fp8_quantize_kernel, dim3(static_cast<unsigned>(a.out.rows)),
                dim3(kQuantThreads), 0, launch, a, vec);
}

void moe_fp8_experts_grouped(const MoeFp8GroupedArgs& a, const Launch& launch) {
  const int64_t T = a.x.rows, H = a.fp8.hidden, I = a.fp8.inter;
  const int32_t E = a.fp8.num_experts;
  if (a.x.dt != Dt::BF16 || !moe_fp8_kernels_supported(H, I) || a.x.cols != H || a.out.cols != H || a.out.rows < T ||
      !aligned16(a.act) || !aligned16(a.y) || a.xq.rows < T || a.xq.cols != H || a.aq.rows < a.max_pairs ||
      a.aq.cols != I)
    unsupported_config("moe_fp8_experts_grouped: hidden " + std::to_string(H) + ", inter " + std::to_string(I) +
                       " or the scratch layout not supported");
  if (E <= 0 || E > 65535 || a.top_k <= 0)
    unsupported_config("moe_fp8_experts_grouped: " + std::to_string(a.top_k) + " of " + std::to_string(E) + " experts");
  if (T <= 0) return;
  const int64_t pairs = T * a.top_k;
  if (pairs > a.max_pairs)
    unsupported_config("moe_fp8_experts_grouped: " + std::to_string(pairs) + " pairs, the scratch holds " +
                       std::to_string(a.max_pairs));
  moe_sort_pairs(a.ids, a.ids_stride, static_cast<int32_t>(T), a.top_k, E, a.counts, a.offsets, a.order, a.position,
                 launch);
  MoeFp8QuantArgs q;
  q.src = a.x.data;
  q.src_stride = a.x.stride;
  q.group = a.fp8.block;
  q.out = a.xq;
  q.out.rows = T;  // (scales [groups][T])
  moe_fp8_quantize(q, launch);

  GroupedK k{};
  k.in = q.out;
  k.in_by_order = true;
  k.order = a.order;
  k.top_k = a.top_k;
  k.offsets = a.offsets;
  k.tbl = a.fp8;
  k.mat0 = 0;
  k.rows = I;
  k.k = H;
  k.scale_cols = ceil_div(H, kFp8Block);
  k.out = a.act;
  launch_grouped<2>(k, launch);

  MoeFp8QuantArgs qa;
  qa.src = a.act;
  qa.src_f32 = true;
  qa.src_stride = I;
  qa.count = a.offsets + E;  // the pairs with a valid expert
  qa.group = a.fp8.block;
  qa.out = a.aq;
  qa.out.rows = pairs;
  moe_fp8_quantize(qa, launch);

  k.in = qa.out;
  k.in_by_order = false;
  k.mat0 = 2;
  k.rows = H;
  k.k = I;
  k.scale_cols = ceil_div(I, kFp8Block);
  k.out = a.y;
  launch_grouped<1>(k, launch);
  moe_combine(moe_combine_args(a, a.y, a.position), launch);
}

}  // namespace inferdesk::cuda
