// Fused per-head q/k RMSNorm (Qwen3) + rotary embedding + KV-cache write.
//
// One warp per (token, head) item: the items of a token are its num_q_heads query heads, then its
// num_kv_heads key heads (whose warp also copies the matching value head into the cache). The
// warp stages the head in shared memory as F32 (after the optional norm), then each lane produces
// the rotated values of its elements and writes them back in place (q, k) and into the cache (k,
// v). The maths follows the CPU backend step by step: rms_norm over head_dim with w * (x * r),
// then rotate_half over the first rotary_dim dims with angle = inv_freq[i] * position formed in
// F32 and cos/sin evaluated accurately (sincosf, not the fast intrinsic: positions reach 1e5+)
// and multiplied by attention_scaling.
#include <algorithm>
#include <string>

#include "cuda/kernels/common.cuh"

namespace inferdesk::cuda {
namespace {

constexpr int kWarps = 4;  // items per block

struct HeadJob {
  bf16* x;           // the head's first element (rotated in place)
  const bf16* norm;  // [head_dim] or null
  bf16* cache;       // where the rotated head goes, or null
  const bf16* v;     // value head to copy, or null
  bf16* v_cache;
};

__global__ void __launch_bounds__(kWarps * 32) rope_kv_kernel(RopeKvArgs a) {
  extern __shared__ float stage[];  // [kWarps][head_dim]
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int heads = a.num_q_heads + a.num_kv_heads;
  const int64_t item = static_cast<int64_t>(blockIdx.x) * kWarps + warp;
  if (item >= static_cast<int64_t>(a.num_tokens) * heads) return;  // whole warp: no block barrier
  const int64_t t = item / heads;
  const int h = static_cast<int>(item - t * heads);
  const int D = a.head_dim;
  float* s = stage + warp * D;

  HeadJob job{};
  const int32_t slot = a.slot_mapping ? a.slot_mapping[t] : -1;
  if (h < a.num_q_heads) {
    job.x = a.q + t * a.q_stride + static_cast<int64_t>(h) * D;
    job.norm = a.q_norm;
  } else {
    const int kh = h - a.num_q_heads;
    job.x = a.k + t * a.k_stride + static_cast<int64_t>(kh) * D;
    job.norm = a.k_norm;
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

  // Stage (normalised) values. Each lane only ever touches elements lane + 32 i of global memory.
  float ss = 0.0f;
  for (int d = lane; d < D; d += 32) {
    const float v = __bfloat162float(job.x[d]);
    s[d] = v;
    ss += v * v;
  }
  if (job.norm) {
    ss = warp_sum(ss);
    const float inv = 1.0f / sqrtf(ss / static_cast<float>(D) + a.eps);
    for (int d = lane; d < D; d += 32) s[d] = __bfloat162float(job.norm[d]) * (s[d] * inv);
  }
  __syncwarp();

  const int half = a.rotary_dim / 2;
  const float pos = a.positions ? static_cast<float>(a.positions[t]) : 0.0f;
  for (int d = lane; d < D; d += 32) {
    float out = s[d];
    if (d < 2 * half) {
      const int i = d < half ? d : d - half;
      float sn, cs;
      sincosf(__fmul_rn(a.inv_freq[i], pos), &sn, &cs);
      cs = __fmul_rn(cs, a.attention_scaling);
      sn = __fmul_rn(sn, a.attention_scaling);
      // rotate_half: [x1, x2] -> [x1 c - x2 s, x2 c + x1 s]
      out = d < half ? s[d] * cs - s[d + half] * sn : s[d] * cs + s[d - half] * sn;
    }
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
  const int64_t items = static_cast<int64_t>(a.num_tokens) * (a.num_q_heads + a.num_kv_heads);
  const auto blocks = static_cast<unsigned>((items + kWarps - 1) / kWarps);
  const size_t smem = sizeof(float) * kWarps * static_cast<size_t>(a.head_dim);
  rope_kv_kernel<<<blocks, kWarps * 32, smem, stream>>>(a);
  check_launch("qk_norm_rope_write_kv");
}

}  // namespace inferdesk::cuda
