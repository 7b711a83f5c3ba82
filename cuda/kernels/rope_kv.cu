// Fused per-head q/k RMSNorm (Qwen3) + rotary embedding + KV-cache write.
//
// Vector path (head_dim 32/64/128/256 fully rotated, 16-byte aligned tensors, the usual case):
// grid (token, group of heads); a head is served by head_dim / 8 consecutive lanes, each owning
// one 16-byte chunk of 8 elements. The norm's sum of squares is reduced over those lanes with
// shuffles, and since rotate_half pairs chunk c with chunk c + head_dim / 16 (= lane xor that),
// the partner values come by shuffle too: one 16-byte load and store per lane and tensor. The
// block's cos/sin table (shared by its heads) is computed before pdl_wait(), while the previous
// kernel (the q|k|v projection) finishes: after it only the loads, the rotation and the stores.
//
// Scalar path (any other head_dim, partial rotary, unaligned tensors): grid (token, group of
// kWarps heads); the heads of a token are its num_q_heads query heads, then
// its num_kv_heads key heads (whose warp also copies the matching value head into the cache). A
// block first computes the token's cos/sin table (rotary_dim / 2 entries, shared by all its heads)
// in shared memory; then each warp stages its head there as F32 (after the optional norm) and
// every lane produces the rotated values of its elements and writes them back in place (q, k) and
// into the cache (k, v). The maths follows the CPU backend step by step (rms_scale, rope_cos_sin
// and rotate_half of device_math.cuh): rms_norm over head_dim as w * (x * r), then rotate_half
// over the first rotary_dim dims with angle = inv_freq[i] * position formed in F32, the accurate
// cos/sin multiplied by attention_scaling.
//
// An E4M3 cache (RopeKvArgs::kv) receives each value quantized from F32 (K after the rotation,
// before any BF16 rounding) with the layer's scale, as the CPU backend's write_kv rounds it: 8
// bytes per lane on the vector path, one per element on the scalar one. q and k keep BF16.
#include <algorithm>
#include <string>

#include "cuda/kernels/common.cuh"
#include "cuda/kernels/common.h"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kv_fp8.cuh"
#include "cuda/kernels/launch.h"
#include "cuda/kernels/rope_kv.h"

namespace inferdesk::cuda {
namespace {

constexpr int kWarps = 8;         // heads per block (scalar path)
constexpr int kVecThreads = 128;  // threads per block (vector path)

struct HeadJob {
  bf16* x;           // the head's first element (rotated in place)
  const bf16* norm;  // [head_dim] or null
  int64_t dst = -1;  // the head's first element in the cache, or -1: not written
  const bf16* v;     // value head to copy, or null
};

// Element i of a cache stores v: BF16, or E4M3 of v * inv_scale.
__device__ __forceinline__ void store_kv(void* cache, bool fp8, int64_t i, float v, float inv_scale) {
  if (fp8)
    static_cast<uint8_t*>(cache)[i] = quantize_e4m3(v, inv_scale);
  else
    static_cast<bf16*>(cache)[i] = __float2bfloat16(v);
}

// Shared memory: cos[half], sin[half], then [kWarps][head_dim] staged heads.
__global__ void __launch_bounds__(kWarps * 32) rope_kv_kernel(RopeKvArgs a) {
  extern __shared__ float smem[];
  pdl_launch_dependents();
  const int half = a.rotary_dim / 2;
  const int D = a.head_dim;
  float* cos_t = smem;
  float* sin_t = smem + half;
  const int64_t t = blockIdx.x;
  const float pos = a.positions ? static_cast<float>(a.positions[t]) : 0.0f;
  for (int i = threadIdx.x; i < half; i += blockDim.x)
    rope_cos_sin(a.inv_freq[i], pos, a.attention_scaling, cos_t[i], sin_t[i]);
  __syncthreads();  // the only block-wide barrier: warps may leave after it
  pdl_wait();       // the table (immutable inputs and step metadata) came first

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int h = static_cast<int>(blockIdx.y) * kWarps + warp;
  if (h >= a.num_q_heads + a.num_kv_heads) return;
  float* s = smem + 2 * half + warp * D;

  HeadJob job{};
  if (h < a.num_q_heads) {
    job.x = a.q + t * a.q_stride + static_cast<int64_t>(h) * D;
    job.norm = a.q_norm;
  } else {
    const int kh = h - a.num_q_heads;
    job.x = a.k + t * a.k_stride + static_cast<int64_t>(kh) * D;
    job.norm = a.k_norm;
    const int32_t slot = a.slot_mapping ? a.slot_mapping[t] : -1;
    if (slot >= 0 && a.k_cache) {
      // [num_blocks][num_kv_heads][block_size][head_dim]
      const int64_t block = slot / a.block_size, off = slot % a.block_size;
      job.dst = ((block * a.num_kv_heads + kh) * a.block_size + off) * D;
      if (a.v && a.v_cache) job.v = a.v + t * a.v_stride + static_cast<int64_t>(kh) * D;
    }
  }

  // Stage (normalised) values. Each lane only ever touches elements lane + 32 i of global memory,
  // so the in-place write below cannot race with another lane's read.
  float ss = 0.0f;
  for (int d = lane; d < D; d += 32) {
    const float v = __bfloat162float(job.x[d]);
    s[d] = v;
    ss += v * v;
  }
  if (job.norm) {  // warp-uniform
    ss = warp_sum(ss);
    const float inv = rms_scale(ss, static_cast<float>(D), a.eps);
    for (int d = lane; d < D; d += 32) s[d] = __bfloat162float(job.norm[d]) * (s[d] * inv);
  }
  __syncwarp();

  const bool fp8 = a.kv.fp8();
  const float inv_k = 1.0f / a.kv.k_scale, inv_v = 1.0f / a.kv.v_scale;  // BF16: unused
  for (int d = lane; d < D; d += 32) {
    float out = s[d];
    if (d < half)
      out = rotate_half(s[d], s[d + half], cos_t[d], sin_t[d], /*first=*/true);
    else if (d < 2 * half)
      out = rotate_half(s[d], s[d - half], cos_t[d - half], sin_t[d - half], /*first=*/false);
    job.x[d] = __float2bfloat16(out);
    if (job.dst >= 0) store_kv(a.k_cache, fp8, job.dst + d, out, inv_k);
    if (job.dst >= 0 && job.v) store_kv(a.v_cache, fp8, job.dst + d, __bfloat162float(job.v[d]), inv_v);
  }
}

// Vector path, head_dim D == rotary_dim. Lanes of a head: L = D / 8 (a power of two <= 32, so a
// head's lanes sit in one warp, aligned). All lanes run every shuffle (full mask); lanes of heads
// past the end only skip their memory accesses.
template <int D>
__global__ void __launch_bounds__(kVecThreads) rope_kv_vec_kernel(RopeKvArgs a) {
  constexpr int L = D / 8, kHalf = D / 2, kHeadsPerBlock = kVecThreads / L;
  static_assert(L >= 2 && L <= 32 && (L & (L - 1)) == 0 && kHalf <= kVecThreads);
  __shared__ float cs_t[2][kHalf];  // cos, sin (times attention_scaling)
  const int64_t t = blockIdx.x;
  const int c = static_cast<int>(threadIdx.x) % L;  // chunk of the head: elements [8c, 8c + 8)
  const int h = static_cast<int>(blockIdx.y) * kHeadsPerBlock + static_cast<int>(threadIdx.x) / L;
  const bool active = h < a.num_q_heads + a.num_kv_heads;
  const bool is_q = h < a.num_q_heads;
  const int kh = h - a.num_q_heads;

  // Before waiting for the previous kernel: immutable data (inv_freq, norm weights), the step's
  // metadata (positions, slots: uploaded before the step's first kernel, written by none) and the
  // cos/sin table, so that after the wait only the loads, the rotation and the stores remain.
  const bf16* norm = is_q ? a.q_norm : a.k_norm;  // the same for all lanes of a head
  float nw[8];
  if (active && norm) unpack_bf16x8(*reinterpret_cast<const uint4*>(norm + 8 * c), nw);
  const int32_t slot = active && !is_q && a.slot_mapping ? a.slot_mapping[t] : -1;
  if (threadIdx.x < kHalf) {
    const float pos = a.positions ? static_cast<float>(a.positions[t]) : 0.0f;
    rope_cos_sin(a.inv_freq[threadIdx.x], pos, a.attention_scaling, cs_t[0][threadIdx.x], cs_t[1][threadIdx.x]);
  }
  __syncthreads();  // the cos/sin table is complete (the only block-wide barrier)
  pdl_launch_dependents();
  pdl_wait();

  bf16* xp = nullptr;
  int64_t dst = -1;  // this lane's first cache element, or -1: not written
  bool copy_v = false;
  uint4 xr = make_uint4(0, 0, 0, 0), vr = xr;
  if (active) {
    xp = (is_q ? a.q + t * a.q_stride + static_cast<int64_t>(h) * D
               : a.k + t * a.k_stride + static_cast<int64_t>(kh) * D) +
         8 * c;
    xr = *reinterpret_cast<const uint4*>(xp);
    copy_v = !is_q && a.k_cache && a.v && a.v_cache;
    // v is loaded whatever the slot, so that its load does not wait for the slot's.
    if (copy_v) vr = *reinterpret_cast<const uint4*>(a.v + t * a.v_stride + static_cast<int64_t>(kh) * D + 8 * c);
    if (slot >= 0 && a.k_cache) {
      // [num_blocks][num_kv_heads][block_size][head_dim]
      const int64_t block = slot / a.block_size, off = slot % a.block_size;
      dst = ((block * a.num_kv_heads + kh) * a.block_size + off) * D + 8 * c;
    }
  }
  float v[8];
  unpack_bf16x8(xr, v);
  float ss = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) ss += v[i] * v[i];
#pragma unroll
  for (int o = L / 2; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if (active && norm) {
    const float inv = rms_scale(ss, static_cast<float>(D), a.eps);
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = nw[i] * (v[i] * inv);
  }
  // rotate_half; the partner chunk is L / 2 lanes away.
  float p[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) p[i] = __shfl_xor_sync(0xffffffffu, v[i], L / 2);
  if (!active) return;
  const bool first = c < L / 2;
  const int j0 = 8 * c - (first ? 0 : kHalf);
  float o[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    o[i] = rotate_half(v[i], p[i], cs_t[0][j0 + i], cs_t[1][j0 + i], first);
  }
  const uint4 out = pack_bf16x8(o);
  *reinterpret_cast<uint4*>(xp) = out;
  if (dst < 0) return;
  if (!a.kv.fp8()) {
    *reinterpret_cast<uint4*>(static_cast<bf16*>(a.k_cache) + dst) = out;
    if (copy_v) *reinterpret_cast<uint4*>(static_cast<bf16*>(a.v_cache) + dst) = vr;
    return;
  }
  *reinterpret_cast<uint2*>(static_cast<uint8_t*>(a.k_cache) + dst) = quantize_e4m3x8(o, 1.0f / a.kv.k_scale);
  if (copy_v) {
    float vf[8];
    unpack_bf16x8(vr, vf);
    *reinterpret_cast<uint2*>(static_cast<uint8_t*>(a.v_cache) + dst) = quantize_e4m3x8(vf, 1.0f / a.kv.v_scale);
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Whether the vector kernel can serve these arguments (head_dim is checked by the caller).
bool vec_path_ok(const RopeKvArgs& a) {
  const bool many = a.num_tokens > 1;
  auto rows_ok = [&](const void* p, int64_t stride) {
    return p == nullptr || (aligned16(p) && (!many || stride % 8 == 0));
  };
  return a.rotary_dim == a.head_dim && rows_ok(a.q, a.q_stride) && rows_ok(a.k, a.k_stride) &&
         rows_ok(a.v, a.v_stride) && aligned16(a.k_cache) && aligned16(a.v_cache) && aligned16(a.q_norm) &&
         aligned16(a.k_norm);
}

template <int D>
void launch_vec(const RopeKvArgs& a, const Launch& launch) {
  constexpr int kHeadsPerBlock = kVecThreads / (D / 8);
  const int heads = a.num_q_heads + a.num_kv_heads;
  const dim3 grid(static_cast<unsigned>(a.num_tokens),
                  static_cast<unsigned>((heads + kHeadsPerBlock - 1) / kHeadsPerBlock));
  launch_kernel("qk_norm_rope_write_kv", rope_kv_vec_kernel<D>, grid, dim3(kVecThreads), 0, launch, a);
}

}  // namespace

void qk_norm_rope_write_kv(const RopeKvArgs& a, const Launch& launch) {
  if (a.num_tokens <= 0 || a.num_q_heads + a.num_kv_heads <= 0) return;
  if (a.head_dim <= 0 || a.head_dim > 1024)
    unsupported_config("qk_norm_rope_write_kv: head_dim " + std::to_string(a.head_dim));
  if (a.rotary_dim < 0 || a.rotary_dim % 2 != 0 || a.rotary_dim > a.head_dim ||
      (a.rotary_dim > 0 && a.inv_freq == nullptr))
    unsupported_config("qk_norm_rope_write_kv: rotary_dim " + std::to_string(a.rotary_dim) + " for head_dim " +
                       std::to_string(a.head_dim));
  if (a.num_kv_heads > 0 && a.k == nullptr) unsupported_config("qk_norm_rope_write_kv: key heads without a k tensor");
  if (a.k_cache && a.block_size <= 0)
    unsupported_config("qk_norm_rope_write_kv: block_size " + std::to_string(a.block_size));
  if (vec_path_ok(a)) {
    switch (a.head_dim) {
      case 32: return launch_vec<32>(a, launch);
      case 64: return launch_vec<64>(a, launch);
      case 128: return launch_vec<128>(a, launch);
      case 256: return launch_vec<256>(a, launch);
      default: break;
    }
  }
  const int heads = a.num_q_heads + a.num_kv_heads;
  const dim3 grid(static_cast<unsigned>(a.num_tokens), static_cast<unsigned>((heads + kWarps - 1) / kWarps));
  const size_t smem = sizeof(float) * (static_cast<size_t>(a.rotary_dim) +
                                       static_cast<size_t>(kWarps) * static_cast<size_t>(a.head_dim));
  launch_kernel("qk_norm_rope_write_kv", rope_kv_kernel, grid, dim3(kWarps * 32), smem, launch, a);
}

}  // namespace inferdesk::cuda
