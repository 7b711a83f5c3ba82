#include "core/layers/attention.h"

#include <cmath>

namespace inferdesk {

namespace {

const Tensor* or_null(const Buffer& b) { return b.empty() ? nullptr : &b.tensor(); }

}  // namespace

void attention_block(Backend& b, int32_t layer, const AttentionWeights& a, const AttentionShape& s,
                     const RopeConfig& rope, const Tensor& next_norm, const ActivationBuffers& acts, int64_t T) {
  const int32_t D = s.head_dim, Hq = s.num_heads, Hk = s.num_kv_heads;
  Tensor h = acts.h.tensor().row_slice(0, T);
  const Tensor* q_norm = or_null(a.q_norm);
  const Tensor* k_norm = or_null(a.k_norm);
  Tensor q, k, v;
  if (!a.qkv.empty()) {
    Tensor qkv = acts.qkv.tensor().row_slice(0, T);
    b.qkv_rope_write_kv(layer, h, a.qkv.tensor(), or_null(a.qkv_bias), qkv, q_norm, k_norm, s.eps, Hq, Hk, D, rope);
    q = qkv.col_slice(0, int64_t{Hq} * D);
  } else {
    q = acts.q.tensor().row_slice(0, T);
    k = acts.k.tensor().row_slice(0, T);
    v = acts.v.tensor().row_slice(0, T);
    b.linear(h, a.q.tensor(), or_null(a.q_bias), q);
    b.linear(h, a.k.tensor(), or_null(a.k_bias), k);
    b.linear(h, a.v.tensor(), or_null(a.v_bias), v);
    b.qk_norm_rope_write_kv(layer, q, k, v, q_norm, k_norm, s.eps, Hq, Hk, D, rope);
  }
  const AttentionParams p{.num_heads = Hq,
                          .num_kv_heads = Hk,
                          .head_dim = D,
                          .scale = 1.0f / std::sqrt(static_cast<float>(D)),
                          .sliding_window = s.sliding_window};
  Tensor attn = acts.attn.tensor().row_slice(0, T);
  b.attention(layer, q, p, attn);
  b.linear_add_rms_norm(attn, a.o.tensor(), acts.o.tensor().row_slice(0, T), acts.x.tensor().row_slice(0, T), next_norm,
                        s.eps, h);
}

}  // namespace inferdesk
