// CpuBackend: rotary embedding, KV-cache writes and paged attention.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/backend/cpu/cpu_backend_impl.h"
#include "core/util/error.h"
#include "core/util/fp8.h"

namespace inferdesk::cpu {

namespace {
float* frow(const Tensor& t, int64_t r) { return static_cast<float*>(t.data) + r * t.stride; }

float kv_scale(const std::vector<float>& scales, int32_t layer) {
  return scales.empty() ? 1.0f : scales[static_cast<size_t>(layer)];
}

// What an E4M3 cache entry with this scale reads back as (KvCacheShape).
void round_through_fp8(float* x, int64_t n, float scale) {
  const float inv = 1.0f / scale;
  for (int64_t i = 0; i < n; ++i) x[i] = fp8_e4m3_to_f32(f32_to_fp8_e4m3(x[i] * inv)) * scale;
}

// What one head's row reads back as from the 8-bit cache (KvCacheShape's Int8 definition).
void round_through_int8(float* x, int64_t n) {
  float lo = x[0], hi = x[0];
  for (int64_t i = 1; i < n; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
  const float s = std::max((hi - lo) / 255.0f, kKvInt8MinScale);
  const float z = -lo / s;
  for (int64_t i = 0; i < n; ++i) {
    const float q = std::clamp(std::floor(x[i] / s + z + 0.5f), 0.0f, 255.0f);
    x[i] = (q - z) * s;
  }
}
}  // namespace

// cos/sin per token and frequency, computed once per step and RopeConfig. The angle is the float32
// product inv_freq * position, exactly as Hugging Face forms it (so long contexts round the same
// way); cos and sin of that float are then evaluated in double and rounded once, and multiplied by
// attention_scaling in float32 as HF does.
const std::vector<float>& CpuBackend::rope_table(const RopeConfig& rope, int32_t half) {
  if (rope_step_id_ == step_id_ && rope_scaling_ == rope.attention_scaling && rope_inv_freq_ == rope.inv_freq)
    return rope_cs_;
  const int64_t T = step_.num_tokens();
  rope_cs_.assign(static_cast<size_t>(T * 2 * half), 0.0f);
  for (int64_t t = 0; t < T; ++t) {
    const float pos = static_cast<float>(step_.positions[t]);
    float* c = rope_cs_.data() + t * 2 * half;
    float* s = c + half;
    for (int32_t d = 0; d < half; ++d) {
      const float angle = rope.inv_freq[d] * pos;
      c[d] = static_cast<float>(std::cos(static_cast<double>(angle))) * rope.attention_scaling;
      s[d] = static_cast<float>(std::sin(static_cast<double>(angle))) * rope.attention_scaling;
    }
  }
  rope_step_id_ = step_id_;
  rope_scaling_ = rope.attention_scaling;
  rope_inv_freq_ = rope.inv_freq;
  return rope_cs_;
}

void CpuBackend::rope(Tensor q, Tensor k, int32_t num_q_heads, int32_t num_kv_heads, int32_t head_dim,
                      const RopeConfig& rope) {
  const int32_t half = rope.rotary_dim / 2;
  if (rope.rotary_dim <= 0 || rope.rotary_dim > head_dim || rope.rotary_dim % 2 != 0 ||
      static_cast<int32_t>(rope.inv_freq.size()) != half)
    throw Error(ErrorCode::Internal, "rope: rotary_dim " + std::to_string(rope.rotary_dim) + " does not fit head_dim " +
                                         std::to_string(head_dim) + " and " + std::to_string(rope.inv_freq.size()) +
                                         " frequencies");
  if (static_cast<int64_t>(step_.positions.size()) < q.rows)
    throw Error(ErrorCode::Internal, "rope: the step has fewer positions than rows");
  const std::vector<float>& cs = rope_table(rope, half);
  auto rotate = [&](float* x, int32_t heads, const float* c, const float* s) {
    for (int32_t h = 0; h < heads; ++h) {
      float* xh = x + static_cast<int64_t>(h) * head_dim;
      for (int32_t d = 0; d < half; ++d) {
        const float x1 = xh[d], x2 = xh[d + half];
        xh[d] = x1 * c[d] - x2 * s[d];
        xh[d + half] = x2 * c[d] + x1 * s[d];
      }
    }
  };
  for_rows(q.rows, int64_t{num_q_heads + num_kv_heads} * half * 4, [&](int64_t r0, int64_t r1) {
    for (int64_t t = r0; t < r1; ++t) {
      const float* c = cs.data() + t * 2 * half;
      rotate(frow(q, t), num_q_heads, c, c + half);
      if (!k.empty()) rotate(frow(k, t), num_kv_heads, c, c + half);
    }
  });
}

void CpuBackend::write_kv(int32_t layer, const Tensor& k, const Tensor& v) {
  const KvCacheShape& s = kv_shape_;
  if (!kv_) throw Error(ErrorCode::Internal, "write_kv: init_kv_cache was not called");
  const int64_t row = int64_t{s.num_kv_heads} * s.head_dim;
  if (layer < 0 || layer >= s.num_layers || k.cols != row || v.cols != row || k.rows != v.rows ||
      static_cast<int64_t>(step_.slot_mapping.size()) < k.rows)
    throw Error(ErrorCode::Internal, "write_kv: layer or shapes do not match the KV cache");
  float* kc = kv_.get() + int64_t{2} * layer * kv_layer_elems_;
  float* vc = kc + kv_layer_elems_;
  const int64_t slots = int64_t{s.num_blocks} * s.block_size;
  // The cache is [block, kv_head, slot in block, dim] (see kv_ in cpu_backend_impl.h): a token's
  // row [kv_heads * head_dim] is scattered into num_kv_heads runs of head_dim floats.
  const int64_t head_block = int64_t{s.block_size} * s.head_dim;
  const size_t head_bytes = static_cast<size_t>(s.head_dim) * 4;
  for (int64_t t = 0; t < k.rows; ++t) {
    const int64_t slot = step_.slot_mapping[t];
    if (slot < 0 || slot >= slots)
      throw Error(ErrorCode::Internal, "write_kv: slot " + std::to_string(slot) + " is outside the cache (" +
                                           std::to_string(slots) + " slots)");
    const int64_t dst = slot / s.block_size * row * s.block_size + slot % s.block_size * s.head_dim;
    const float* kr = frow(k, t);
    const float* vr = frow(v, t);
    for (int32_t h = 0; h < s.num_kv_heads; ++h) {
      const int64_t o = dst + h * head_block;
      std::memcpy(kc + o, kr + int64_t{h} * s.head_dim, head_bytes);
      std::memcpy(vc + o, vr + int64_t{h} * s.head_dim, head_bytes);
      if (s.dtype == KvCacheDtype::Fp8) {
        round_through_fp8(kc + o, s.head_dim, kv_scale(s.k_scales, layer));
        round_through_fp8(vc + o, s.head_dim, kv_scale(s.v_scales, layer));
      } else if (s.dtype == KvCacheDtype::Int8) {
        round_through_int8(kc + o, s.head_dim);
        round_through_int8(vc + o, s.head_dim);
      }
    }
  }
}

void CpuBackend::check_attention_step(const AttentionParams& p) const {
  const KvCacheShape& s = kv_shape_;
  if (!kv_) throw Error(ErrorCode::Internal, "attention: init_kv_cache was not called");
  if (p.num_kv_heads != s.num_kv_heads || p.head_dim != s.head_dim || p.num_heads <= 0 ||
      p.num_heads % p.num_kv_heads != 0)
    throw Error(ErrorCode::Internal, "attention: heads do not match the KV cache");
  if (step_.block_size != s.block_size)
    throw Error(ErrorCode::Internal, "attention: step block_size differs from the cache's");
  for (const StepSeq& q : step_.seqs) {
    const int64_t needed = (int64_t{q.context_len} + s.block_size - 1) / s.block_size;
    if (q.query_len < 0 || q.context_len < q.query_len || q.num_blocks < needed || q.query_start < 0 ||
        q.query_start + q.query_len > step_.num_tokens() || q.block_table_start < 0 ||
        int64_t{q.block_table_start} + needed > static_cast<int64_t>(step_.block_tables.size()))
      throw Error(ErrorCode::Internal, "attention: inconsistent sequence in the step");
    for (int64_t b = 0; b < needed; ++b) {
      const int32_t id = step_.block_tables[q.block_table_start + b];
      if (id < 0 || id >= s.num_blocks)
        throw Error(ErrorCode::Internal, "attention: block id " + std::to_string(id) + " is outside the cache");
    }
  }
}

void CpuBackend::attention(int32_t layer, const Tensor& q, const AttentionParams& p, Tensor out) {
  check_attention_step(p);
  if (layer < 0 || layer >= kv_shape_.num_layers) throw Error(ErrorCode::Internal, "attention: layer out of range");
  const float* kc = kv_.get() + int64_t{2} * layer * kv_layer_elems_;
  const float* vc = kc + kv_layer_elems_;
  const int32_t group = p.num_heads / p.num_kv_heads;
  const int32_t bs = kv_shape_.block_size;
  // Work items: (sequence, group of up to kAttentionMaxRows consecutive rows, kv head), listed
  // so that the pool can hand them out.
  struct Item {
    int32_t seq;
    int32_t row;
    int32_t rows;
  };
  std::vector<Item> items;
  for (int32_t si = 0; si < static_cast<int32_t>(step_.seqs.size()); ++si) {
    const StepSeq& sq = step_.seqs[si];
    for (int32_t t = sq.query_start; t < sq.query_start + sq.query_len; t += kAttentionMaxRows)
      items.push_back({si, t, std::min(kAttentionMaxRows, sq.query_start + sq.query_len - t)});
  }
  const int64_t n_items = static_cast<int64_t>(items.size()) * p.num_kv_heads;
  const int64_t per_thread = (attention_scratch_floats(p.head_dim, bs) + 15) / 16 * 16;
  float* scratch = scratch_threads_.floats(per_thread * pool_.size());
  pool_.parallel_for(n_items, [&](int64_t i, int thread) {
    const Item& item = items[i / p.num_kv_heads];
    const int32_t hk = static_cast<int32_t>(i % p.num_kv_heads);
    const StepSeq& sq = step_.seqs[item.seq];
    const int64_t pos = int64_t{sq.context_len} - sq.query_len + (item.row - sq.query_start);
    AttentionItem a;
    a.q = frow(q, item.row) + int64_t{hk} * group * p.head_dim;
    a.q_stride = q.stride;
    a.out = frow(out, item.row) + int64_t{hk} * group * p.head_dim;
    a.out_stride = out.stride;
    a.rows = item.rows;
    a.group = group;
    a.head_dim = p.head_dim;
    a.scale = p.scale;
    a.k_cache = kc;
    a.v_cache = vc;
    a.block_size = bs;
    a.num_kv_heads = p.num_kv_heads;
    a.kv_head = hk;
    a.block_table = step_.block_tables.data() + sq.block_table_start;
    a.key_end = pos;
    a.sliding_window = p.sliding_window;
    a.scratch = scratch + per_thread * thread;
    k_.attention(a);
  });
}

}  // namespace inferdesk::cpu
