// Fused per-head q/k RMSNorm (Qwen3) + rotary embedding + KV-cache write.
//
// Grid (token, group of kWarps heads); the heads of a token are its num_q_heads query heads, then
// its num_kv_heads key heads (whose warp also copies the matching value head into the cache). A
// block first computes the token's cos/sin table (rotary_dim / 2 entries, shared by all its heads)
// in shared memory; then each warp stages its head there as F32 (after the optional norm) and
// every lane produces the rotated values of its elements and writes them back in place (q, k) and
// into the cache (k, v). The maths follows the CPU backend step by step: rms_norm over head_dim
// as w * (x * r), then rotate_half over the first rotary_dim dims with angle = inv_freq[i] *
// position formed in F32, cos/sin evaluated accurately (sincosf, not the fast intrinsic:
// positions reach 1e5+) and multiplied by attention_scaling.
#include <algorithm>
#include <string>

#include "cuda/kernels/common.cuh"

namespace inferdesk::cuda {
namespace {

constexpr int kWarps = 8;  // heads per block

struct HeadJob {
  bf16* x;           // the head's first element (rotated in place)
  const bf16* norm;  // [head_dim] or null
  bf16* cache;       // where the rotated head goes, or null
  const bf16* v;     // value head to copy, or null
  bf16* v_cache;
};

// Shared memory: cos[half], sin[half], then [kWarps][head_dim] staged heads.
__global__ void __launch_bounds__(kWarps * 32) rope_kv_kernel(RopeKvArgs a) {
  extern __shared__ float smem[];
  const int half = a.rotary_dim / 2;
  const int D = a.head_dim;
  float* cos_t = smem;
  float* sin_t = smem + half;
  const int64_t t = blockIdx.x;
  const float pos = a.positions ? static_cast<float>(a.positions[t]) : 0.0f;
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    float sn, cs;
    sincosf(__fmul_rn(a.inv_freq[i], pos), &sn, &cs);
    cos_t[i] = __fmul_rn(cs, a.attention_scaling);
    sin_t[i] = __fmul_rn(sn, a.attention_scaling);
  }
  __syncthreads();  // the only block-wide barrier: warps may leave after it

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
      const int64_t dst = ((block * a.num_kv_heads + kh) * a.block_size + off) * D;
      job.cache = a.k_cache + dst;
      if (a.v && a.v_cache) {
        job.v = a.v + t * a.v_stride + static_cast<int64_t>(kh) * D;
        job.v_cache = a.v_cache + dst;
      }
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
    const float inv = 1.0f / sqrtf(ss / static_cast<float>(D) + a.eps);
    for (int d = lane; d < D; d += 32) s[d] = __bfloat162float(job.norm[d]) * (s[d] * inv);
  }
  __syncwarp();

  for (int d = lane; d < D; d += 32) {
    float out = s[d];
    // rotate_half: [x1, x2] -> [x1 c - x2 s, x2 c + x1 s]
    if (d < half)
      out = s[d] * cos_t[d] - s[d + half] * sin_t[d];
    else if (d < 2 * half)
      out = s[d] * cos_t[d - half] + s[d - half] * sin_t[d - half];
    const bf16 o = __float2bfloat16(out);
    job.x[d] = o;
    if (job.cache) job.cache[d] = o;
    if (job.v) job.v_cache[d] = job.v[d];
  }
}

}  // namespace

void qk_norm_rope_write_kv(const RopeKvArgs& a, cudaStream_t stream) {
  if (a.num_tokens <= 0 || a.num_q_heads + a.num_kv_heads <= 0) return;
  if (a.head_dim <= 0 || a.head_dim > 1024)
    unsupported_config("qk_norm_rope_write_kv: head_dim " + std::to_string(a.head_dim));
  if (a.rotary_dim < 0 || a.rotary_dim % 2 != 0 || a.rotary_dim > a.head_dim ||
      (a.rotary_dim > 0 && a.inv_freq == nullptr))
    unsupported_config("qk_norm_rope_write_kv: rotary_dim " + std::to_string(a.rotary_dim) +
                       " for head_dim " + std::to_string(a.head_dim));
  if (a.num_kv_heads > 0 && a.k == nullptr)
    unsupported_config("qk_norm_rope_write_kv: key heads without a k tensor");
  if (a.k_cache && a.block_size <= 0)
    unsupported_config("qk_norm_rope_write_kv: block_size " + std::to_string(a.block_size));
  const int heads = a.num_q_heads + a.num_kv_heads;
  const dim3 grid(static_cast<unsigned>(a.num_tokens), static_cast<unsigned>((heads + kWarps - 1) / kWarps));
  const size_t smem = sizeof(float) * (static_cast<size_t>(a.rotary_dim) +
                                       static_cast<size_t>(kWarps) * static_cast<size_t>(a.head_dim));
  rope_kv_kernel<<<grid, kWarps * 32, smem, stream>>>(a);
  check_launch("qk_norm_rope_write_kv");
}

}  // namespace inferdesk::cuda
