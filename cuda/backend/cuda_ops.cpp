// CudaBackend ops: thin dispatch from core's Tensor views to the kernel launchers. Operands come
// settled from the kernel policy (policy_.input / settled), which also picks the GEMM paths.
#include <cuda_runtime.h>

#include "core/util/error.h"
#include "cuda/backend/cuda_backend_impl.h"
#include "cuda/kernels/attention.h"
#include "cuda/kernels/elementwise.h"
#include "cuda/kernels/gemv.h"
#include "cuda/kernels/moe.h"
#include "cuda/kernels/rope_kv.h"

namespace inferdesk::cuda {

void CudaBackend::embed(const Tensor& table, Tensor out) {
  embed_rows(as_mat(table), steps_.buffers().token_ids, as_mat(out), ctx_.launch);
}

void CudaBackend::rms_norm(const Tensor& x, const Tensor& w, float eps, Tensor out) {
  cuda::rms_norm(policy_.input(x), bf16_ptr(w, "norm weight"), eps, as_mat(out), ctx_.launch);
}

void CudaBackend::add_rms_norm(Tensor residual, const Tensor& x, const Tensor& w, float eps, Tensor out) {
  cuda::add_rms_norm(as_mat(residual), policy_.input(x), bf16_ptr(w, "norm weight"), eps, as_mat(out), ctx_.launch);
}

void CudaBackend::linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor out) {
  policy_.linear(x, w, bias, out);
}

void CudaBackend::linear_swiglu(const Tensor& x, const Tensor& w_gate_up, Tensor scratch, Tensor out) {
  policy_.linear_swiglu(x, w_gate_up, scratch, out);
}

void CudaBackend::linear_add_rms_norm(const Tensor& x, const Tensor& w, Tensor scratch, Tensor residual,
                                      const Tensor& norm_w, float eps, Tensor out) {
  if (!policy_.fused_linear_add_rms_norm(x, w, residual, norm_w, eps, out))
    Backend::linear_add_rms_norm(x, w, scratch, residual, norm_w, eps, out);
}

void CudaBackend::qk_norm_rope_write_kv(int32_t layer, Tensor q, Tensor k, const Tensor& v, const Tensor* q_norm,
                                        const Tensor* k_norm, float eps, int32_t num_q_heads, int32_t num_kv_heads,
                                        int32_t head_dim, const RopeConfig& rope) {
  RopeKvArgs a;
  a.q = static_cast<bf16*>(policy_.settled(q).data);
  a.q_stride = q.stride;
  a.k = static_cast<bf16*>(policy_.settled(k).data);
  a.k_stride = k.stride;
  a.v = bf16_ptr(policy_.settled(v), "v");
  a.v_stride = v.stride;
  bf16_ptr(q, "q");
  bf16_ptr(k, "k");
  a.q_norm = q_norm ? bf16_ptr(*q_norm, "q norm") : nullptr;
  a.k_norm = k_norm ? bf16_ptr(*k_norm, "k norm") : nullptr;
  a.eps = eps;
  a.inv_freq = rope_tables_.get(rope);
  a.rotary_dim = rope.rotary_dim;
  a.attention_scaling = rope.attention_scaling;
  a.positions = steps_.buffers().positions;
  a.slot_mapping = steps_.buffers().slots;
  a.k_cache = kv_.k(layer);
  a.v_cache = kv_.v(layer);
  a.num_tokens = static_cast<int32_t>(q.rows);
  a.num_q_heads = num_q_heads;
  a.num_kv_heads = num_kv_heads;
  a.head_dim = head_dim;
  a.block_size = kv_.shape().block_size;
  cuda::qk_norm_rope_write_kv(a, ctx_.launch);
}

// Decode rows without per-head norms and with the whole head rotated: one kernel (the GEMV's
// epilogue rotates and writes the cache). Otherwise (and for FP8 weights) the projection and the
// op separately.
void CudaBackend::qkv_rope_write_kv(int32_t layer, const Tensor& x, const Tensor& w_qkv, const Tensor* bias, Tensor qkv,
                                    const Tensor* q_norm, const Tensor* k_norm, float eps, int32_t num_q_heads,
                                    int32_t num_kv_heads, int32_t head_dim, const RopeConfig& rope) {
  if (!w_qkv.quant && policy_.small_batch(x.rows) && !q_norm && !k_norm && rope.rotary_dim == head_dim &&
      w_qkv.stride == w_qkv.cols) {
    GemvRope r;
    r.inv_freq = rope_tables_.get(rope);
    r.attention_scaling = rope.attention_scaling;
    r.positions = steps_.buffers().positions;
    r.slot_mapping = steps_.buffers().slots;
    r.k_cache = kv_.k(layer);
    r.v_cache = kv_.v(layer);
    r.num_q_heads = num_q_heads;
    r.num_kv_heads = num_kv_heads;
    r.head_dim = head_dim;
    r.block_size = kv_.shape().block_size;
    const bf16* wp = bf16_ptr(w_qkv, "weight");
    const Mat xm = as_mat(x), ym = as_mat(qkv);
    if (gemv_qkv_rope_supported(xm, wp, w_qkv.cols, ym, r)) {
      gemv_qkv_rope(policy_.input(x), wp, w_qkv.cols, bias ? bf16_ptr(*bias, "bias") : nullptr, ym, r, ctx_.launch);
      return;
    }
  }
  Backend::qkv_rope_write_kv(layer, x, w_qkv, bias, qkv, q_norm, k_norm, eps, num_q_heads, num_kv_heads, head_dim,
                             rope);
}

void CudaBackend::rope(Tensor, Tensor, int32_t, int32_t, int32_t, const RopeConfig&) {
  throw Error(ErrorCode::Internal, "the CUDA backend only runs rope fused with the KV write");
}

void CudaBackend::write_kv(int32_t, const Tensor&, const Tensor&) {
  throw Error(ErrorCode::Internal, "the CUDA backend only writes K/V fused with rope");
}

void CudaBackend::attention(int32_t layer, const Tensor& q, const AttentionParams& p, Tensor out) {
  const StepBuffers& sb = steps_.buffers();
  PagedAttentionArgs a;
  a.q = bf16_ptr(policy_.settled(q), "q");
  a.q_stride = q.stride;
  a.out = static_cast<bf16*>(out.data);
  bf16_ptr(out, "attention output");
  a.out_stride = out.stride;
  a.k_cache = kv_.k(layer);
  a.v_cache = kv_.v(layer);
  a.query_start = sb.query_start;
  a.query_len = sb.query_len;
  a.context_len = sb.context_len;
  a.block_table_start = sb.block_table_start;
  a.block_tables = sb.block_tables;
  a.num_seqs = shape_.num_seqs;
  a.max_query_len = shape_.max_query_len;
  a.num_heads = p.num_heads;
  a.num_kv_heads = p.num_kv_heads;
  a.head_dim = p.head_dim;
  a.block_size = kv_.shape().block_size;
  a.scale = p.scale;
  a.sliding_window = p.sliding_window;
  num_heads_seen_ = p.num_heads;
  if (!shape_.decode_only) {
    paged_attention_prefill(a, ctx_.launch);
    return;
  }
  a.num_splits = shape_.splits;
  policy_.choose_decode_kernels(a);
  ensure_attention_workspace(shape_.num_seqs, p.num_heads, p.head_dim, shape_.splits);
  a.workspace = attn_workspace_.get();
  a.split_counters = split_counters_.as<int32_t>();
  paged_attention_decode(a, ctx_.launch);
}

void CudaBackend::silu_mul(const Tensor& gate, const Tensor& up, Tensor out) {
  cuda::silu_mul(policy_.input(gate), policy_.input(up), as_mat(out), ctx_.launch);
}

void CudaBackend::add(Tensor inout, const Tensor& x) {
  const Mat xm = policy_.input(x);
  add_inplace(policy_.input(inout), xm, ctx_.launch);
}

void CudaBackend::gather_rows(const Tensor& x, Tensor out) {
  cuda::gather_rows(policy_.input(x), steps_.buffers().logit_rows, as_mat(out), ctx_.launch);
}

void CudaBackend::moe_route(const Tensor& logits, int32_t top_k, bool normalize, Tensor ids, Tensor weights) {
  policy_.settled(logits);
  const int64_t E = logits.cols;
  if (logits.dtype != DType::F32 || ids.dtype != DType::I32 || weights.dtype != DType::F32 || top_k <= 0 || top_k > E ||
      ids.cols != top_k || weights.cols != top_k || ids.rows < logits.rows || weights.rows < logits.rows)
    throw Error(ErrorCode::Internal, "moe_route: top_k " + std::to_string(top_k) + " of " + std::to_string(E) +
                                         " experts, or tensors of the wrong dtype/shape (logits F32, ids I32, "
                                         "weights F32)");
  cuda::moe_route(static_cast<const float*>(logits.data), logits.stride, static_cast<int32_t>(logits.rows),
                  static_cast<int32_t>(E), top_k, normalize, static_cast<int32_t*>(ids.data), ids.stride,
                  static_cast<float*>(weights.data), weights.stride, ctx_.launch);
}

void CudaBackend::moe_experts(int32_t layer, const Tensor& x, const std::vector<ExpertWeights>& experts,
                              const Tensor& ids, const Tensor& weights, Tensor out) {
  // Padding rows of a graph bucket have slot -1 and are not counted (only while x is the step's
  // rows: ops called outside a step count every row).
  const int32_t* slots = steps_.buffers().slots;
  moe_.experts(layer, policy_.settled(x), experts, ids, weights, out,
               slots != nullptr && x.rows == shape_.rows ? slots : nullptr);
}

void CudaBackend::sigmoid_gate_add(Tensor out, const Tensor& x, const Tensor& gate) {
  const Mat xm = policy_.input(x);
  cuda::sigmoid_gate_add(as_mat(out), xm, policy_.input(gate), ctx_.launch);
}

}  // namespace inferdesk::cuda
