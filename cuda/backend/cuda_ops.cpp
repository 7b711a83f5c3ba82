// CudaBackend ops: thin dispatch from core's Tensor views to the kernel launchers of
// cuda/kernels/*.h (and cuBLASLt for large GEMMs). The MoE ops are in cuda_moe.cpp.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>

#include "core/util/error.h"
#include "cuda/backend/cuda_backend_impl.h"

namespace inferdesk::cuda {

namespace {

const bf16* bf16_ptr(const Tensor& t, const char* what) {
  if (t.dtype != DType::BF16)
    throw Error(ErrorCode::Internal, std::string(what) + " must be BF16 on the CUDA backend");
  return static_cast<const bf16*>(t.data);
}

}  // namespace

void CudaBackend::embed(const Tensor& table, Tensor out) {
  embed_rows(as_mat(table), sb_.token_ids, as_mat(out), launch_);
}

void CudaBackend::rms_norm(const Tensor& x, const Tensor& w, float eps, Tensor out) {
  settle(x);
  cuda::rms_norm(as_mat(x), bf16_ptr(w, "norm weight"), eps, as_mat(out), launch_);
}

void CudaBackend::add_rms_norm(Tensor residual, const Tensor& x, const Tensor& w, float eps,
                               Tensor out) {
  settle(x);
  cuda::add_rms_norm(as_mat(residual), as_mat(x), bf16_ptr(w, "norm weight"), eps, as_mat(out),
                     launch_);
}

bool CudaBackend::try_wide(const Mat& x, const bf16* w, int64_t n, int64_t k, const bf16* bias, const Mat& y,
                          bool swiglu, const WideNorm* norm) {
  if (!swiglu && (wide_mask_ & 8) != 0 && bias == nullptr && x.rows > kGemvMaxRows && x.rows >= wide_min_rows_ &&
      wide_gemm_ksplit_supported(x, w, n, k, y, sm_count_)) {
    wide_gemm_ksplit(x, w, n, k, y, sm_count_, launch_, norm);
    return true;
  }
  if (!swiglu || (wide_mask_ & 1) == 0 || bias != nullptr || x.rows <= kGemvMaxRows || x.rows < wide_min_rows_ ||
      !wide_gemm_swiglu_supported(x, w, n, k, y, sm_count_))
    return false;
  wide_gemm_swiglu(x, w, n, k, y, sm_count_, launch_, norm);
  return true;
}

const WideNorm* CudaBackend::deferred_for(const Tensor& x, WideNorm& storage) const {
  if (!deferred_.h || x.data != deferred_.h || x.rows != deferred_.rows) return nullptr;
  storage = WideNorm{};
  storage.ss_in = norm_ss_;
  storage.ss_tiles = deferred_.tiles;
  storage.norm_k = deferred_.norm_k;
  storage.eps = deferred_.eps;
  return &storage;
}

void CudaBackend::settle(const Tensor& t) {
  if (!deferred_.h || t.data != deferred_.h) return;
  Mat h = as_mat(t);
  h.rows = deferred_.rows;
  wide_norm_scale_rows(h, norm_ss_, deferred_.tiles, deferred_.norm_k, deferred_.eps, launch_);
  deferred_ = {};
}

void CudaBackend::linear_add_rms_norm(const Tensor& x, const Tensor& w, Tensor scratch, Tensor residual,
                                      const Tensor& norm_w, float eps, Tensor out) {
  settle(x);
  if (deferred_.h == out.data) deferred_ = {};  // overwritten
  const Mat xm = as_mat(x), om = as_mat(out), rm = as_mat(residual);
  const bf16* const wp = bf16_ptr(w, "weight");
  const int64_t n = w.rows, k = w.cols;
  const int32_t tiles = wide_gemm_ksplit_tiles(n, sm_count_);  // partial sums per row (norm_ss_ holds sm_count_)
  if (fused_norm_ && x.rows > kGemvMaxRows && x.rows >= wide_min_rows_ && x.rows <= kWideNormRows &&
      w.stride == w.cols && rm.dt == Dt::F32 && rm.cols == n && om.cols == n && out.rows == x.rows &&
      tiles <= sm_count_ && wide_gemm_ksplit_supported(xm, wp, n, k, om, sm_count_)) {
    WideNorm nm;
    nm.resid = static_cast<float*>(rm.data);
    nm.ld_resid = rm.stride;
    nm.gamma = bf16_ptr(norm_w, "norm weight");
    nm.ss_out = norm_ss_;
    wide_gemm_ksplit(xm, wp, n, k, om, sm_count_, launch_, &nm);
    deferred_ = {out.data, out.rows, tiles, static_cast<int32_t>(n), eps};
    ++fused_norms_;
    return;
  }
  Backend::linear_add_rms_norm(x, w, scratch, residual, norm_w, eps, out);
}

void CudaBackend::linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor out) {
  const bf16* wp = bf16_ptr(w, "weight");
  const bf16* bp = bias ? bf16_ptr(*bias, "bias") : nullptr;
  if (w.stride != w.cols) throw Error(ErrorCode::Internal, "weights must be contiguous");
  const Mat xm = as_mat(x), ym = as_mat(out);
  WideNorm storage;
  const WideNorm* nm = deferred_for(x, storage);  // x a deferred norm: scaled in the epilogue
  if (nm && try_wide(xm, wp, w.rows, w.cols, bp, ym, false, nm)) return;
  settle(x);  // otherwise scaled first if it aliases one
  if (options_.small_batch_gemv && x.rows <= kGemvMaxRows && w.cols % 8 == 0)
    gemv(xm, wp, w.rows, w.cols, bp, ym, launch_);
  else if (!try_wide(xm, wp, w.rows, w.cols, bp, ym, false))
    gemm_->run(xm, wp, w.rows, w.cols, bp, ym, stream_);
}

void CudaBackend::linear_swiglu(const Tensor& x, const Tensor& w_gate_up, Tensor scratch,
                                Tensor out) {
  const int64_t inter = w_gate_up.rows / 2;
  if (options_.small_batch_gemv && x.rows <= kGemvMaxRows && w_gate_up.cols % 8 == 0) {
    settle(x);
    gemv_swiglu(as_mat(x), bf16_ptr(w_gate_up, "weight"), inter, w_gate_up.cols, as_mat(out),
                launch_);
    return;
  }
  const bf16* wp = bf16_ptr(w_gate_up, "weight");
  WideNorm storage;
  const WideNorm* nm = deferred_for(x, storage);  // x a deferred norm: scaled in the epilogue
  if (w_gate_up.stride == w_gate_up.cols &&
      try_wide(as_mat(x), wp, w_gate_up.rows, w_gate_up.cols, nullptr, as_mat(out), true, nm))
    return;
  settle(x);
  gemm_->run(as_mat(x), wp, w_gate_up.rows, w_gate_up.cols, nullptr, as_mat(scratch), stream_);
  cuda::silu_mul(as_mat(scratch.col_slice(0, inter)), as_mat(scratch.col_slice(inter, inter)),
                 as_mat(out), launch_);
}

const float* CudaBackend::inv_freq_device(const RopeConfig& rope) {
  const std::pair<const void*, size_t> key{rope.inv_freq.data(), rope.inv_freq.size()};
  auto it = inv_freq_.find(key);
  if (it != inv_freq_.end()) return it->second;
  if (capturing_) throw Error(ErrorCode::Internal, "rope table first used inside a graph capture");
  auto* p = static_cast<float*>(device_alloc(rope.inv_freq.size() * 4, "rope table"));
  // On the backend's stream: a plain cudaMemcpy runs on the legacy default stream, which a
  // non-blocking stream does not wait for, and from pageable memory it may return before the copy
  // lands. (The host table lives in the model's RopeConfig.)
  check_cuda(cudaMemcpyAsync(p, rope.inv_freq.data(), rope.inv_freq.size() * 4,
                             cudaMemcpyHostToDevice, stream_),
             "uploading the rope table");
  inv_freq_[key] = p;
  return p;
}

void CudaBackend::qk_norm_rope_write_kv(int32_t layer, Tensor q, Tensor k, const Tensor& v,
                                        const Tensor* q_norm, const Tensor* k_norm, float eps,
                                        int32_t num_q_heads, int32_t num_kv_heads, int32_t head_dim,
                                        const RopeConfig& rope) {
  settle(q);
  settle(k);
  settle(v);
  RopeKvArgs a;
  a.q = static_cast<bf16*>(q.data);
  a.q_stride = q.stride;
  a.k = static_cast<bf16*>(k.data);
  a.k_stride = k.stride;
  a.v = bf16_ptr(v, "v");
  a.v_stride = v.stride;
  bf16_ptr(q, "q");
  bf16_ptr(k, "k");
  a.q_norm = q_norm ? bf16_ptr(*q_norm, "q norm") : nullptr;
  a.k_norm = k_norm ? bf16_ptr(*k_norm, "k norm") : nullptr;
  a.eps = eps;
  a.inv_freq = inv_freq_device(rope);
  a.rotary_dim = rope.rotary_dim;
  a.attention_scaling = rope.attention_scaling;
  a.positions = sb_.positions;
  a.slot_mapping = sb_.slots;
  a.k_cache = k_cache(layer);
  a.v_cache = v_cache(layer);
  a.num_tokens = static_cast<int32_t>(q.rows);
  a.num_q_heads = num_q_heads;
  a.num_kv_heads = num_kv_heads;
  a.head_dim = head_dim;
  a.block_size = kv_shape_.block_size;
  cuda::qk_norm_rope_write_kv(a, launch_);
}

void CudaBackend::qkv_rope_write_kv(int32_t layer, const Tensor& x, const Tensor& w_qkv,
                                    const Tensor* bias, Tensor qkv, const Tensor* q_norm,
                                    const Tensor* k_norm, float eps, int32_t num_q_heads,
                                    int32_t num_kv_heads, int32_t head_dim, const RopeConfig& rope) {
  // Decode rows without per-head norms and with the whole head rotated: one kernel (the GEMV's
  // epilogue rotates and writes the cache). Otherwise the projection and the op separately.
  if (options_.small_batch_gemv && !q_norm && !k_norm && rope.rotary_dim == head_dim &&
      x.rows <= kGemvMaxRows && w_qkv.stride == w_qkv.cols) {
    GemvRope r;
    r.inv_freq = inv_freq_device(rope);
    r.attention_scaling = rope.attention_scaling;
    r.positions = sb_.positions;
    r.slot_mapping = sb_.slots;
    r.k_cache = k_cache(layer);
    r.v_cache = v_cache(layer);
    r.num_q_heads = num_q_heads;
    r.num_kv_heads = num_kv_heads;
    r.head_dim = head_dim;
    r.block_size = kv_shape_.block_size;
    const bf16* wp = bf16_ptr(w_qkv, "weight");
    const Mat xm = as_mat(x), ym = as_mat(qkv);
    if (gemv_qkv_rope_supported(xm, wp, w_qkv.cols, ym, r)) {
      settle(x);  // this path reads x itself (the default one's linear resolves a deferred x)
      gemv_qkv_rope(xm, wp, w_qkv.cols, bias ? bf16_ptr(*bias, "bias") : nullptr, ym, r, launch_);
      return;
    }
  }
  Backend::qkv_rope_write_kv(layer, x, w_qkv, bias, qkv, q_norm, k_norm, eps, num_q_heads,
                             num_kv_heads, head_dim, rope);
}

void CudaBackend::rope(Tensor, Tensor, int32_t, int32_t, int32_t, const RopeConfig&) {
  throw Error(ErrorCode::Internal, "the CUDA backend only runs rope fused with the KV write");
}

void CudaBackend::write_kv(int32_t, const Tensor&, const Tensor&) {
  throw Error(ErrorCode::Internal, "the CUDA backend only writes K/V fused with rope");
}

void CudaBackend::attention(int32_t layer, const Tensor& q, const AttentionParams& p, Tensor out) {
  settle(q);
  PagedAttentionArgs a;
  a.q = bf16_ptr(q, "q");
  a.q_stride = q.stride;
  a.out = static_cast<bf16*>(out.data);
  bf16_ptr(out, "attention output");
  a.out_stride = out.stride;
  a.k_cache = k_cache(layer);
  a.v_cache = v_cache(layer);
  a.query_start = sb_.query_start;
  a.query_len = sb_.query_len;
  a.context_len = sb_.context_len;
  a.block_table_start = sb_.block_table_start;
  a.block_tables = sb_.block_tables;
  a.num_seqs = num_seqs_;
  a.max_query_len = max_query_len_;
  a.num_heads = p.num_heads;
  a.num_kv_heads = p.num_kv_heads;
  a.head_dim = p.head_dim;
  a.block_size = kv_shape_.block_size;
  a.scale = p.scale;
  a.sliding_window = p.sliding_window;
  num_heads_seen_ = p.num_heads;
  if (!decode_only_) {
    paged_attention_prefill(a, launch_);
    return;
  }
  a.num_splits = splits_;
  a.min_keys_per_split = decode_min_keys_;
  a.small_grid_load = decode_small_grid_load_;
  a.large_grid_load = decode_large_grid_load_;
  a.small_grid_heads_per_block = decode_small_grid_heads_;
  a.max_heads_per_block = decode_max_heads_;
  ensure_attention_workspace(num_seqs_, p.num_heads, p.head_dim, splits_);
  a.workspace = attn_workspace_;
  a.split_counters = static_cast<int32_t*>(split_counters_);
  paged_attention_decode(a, launch_);
}

void CudaBackend::silu_mul(const Tensor& gate, const Tensor& up, Tensor out) {
  settle(gate);
  settle(up);
  cuda::silu_mul(as_mat(gate), as_mat(up), as_mat(out), launch_);
}

void CudaBackend::add(Tensor inout, const Tensor& x) {
  settle(x);
  settle(inout);
  add_inplace(as_mat(inout), as_mat(x), launch_);
}

void CudaBackend::gather_rows(const Tensor& x, Tensor out) {
  settle(x);
  cuda::gather_rows(as_mat(x), sb_.logit_rows, as_mat(out), launch_);
}

void CudaBackend::to_host(const Tensor& t, float* dst) {
  settle(t);
  const size_t es = t.element_size();
  const size_t row_bytes = static_cast<size_t>(t.cols) * es;
  auto* h = static_cast<char*>(staging_[0].get(std::max<size_t>(row_bytes * t.rows, 1)));
  check_cuda(cudaMemcpy2DAsync(h, row_bytes, t.data, static_cast<size_t>(t.stride) * es, row_bytes,
                               static_cast<size_t>(t.rows), cudaMemcpyDeviceToHost, stream_),
             "copying to the host");
  synchronize();
  const int64_t n = t.rows * t.cols;
  if (t.dtype == DType::F32) {
    std::memcpy(dst, h, static_cast<size_t>(n) * 4);
  } else if (t.dtype == DType::BF16) {
    const auto* b = reinterpret_cast<const uint16_t*>(h);
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t u = static_cast<uint32_t>(b[i]) << 16;
      std::memcpy(dst + i, &u, 4);
    }
  } else if (t.dtype == DType::I32) {
    const auto* b = reinterpret_cast<const int32_t*>(h);
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(b[i]);
  } else {
    throw Error(ErrorCode::Internal, "to_host: unsupported dtype");
  }
}

}  // namespace inferdesk::cuda
