// Default implementations of the Backend interface's optional and fused ops, composed of the
// required ops (what the CPU reference backend runs).
#include "core/backend/backend.h"

#include <cmath>
#include <string>

#include "core/util/error.h"

namespace inferdesk {

Buffer Backend::load_weight_rows(const std::vector<HostTensor>&, int64_t) {
  throw Error(ErrorCode::Unsupported, name() + " backend does not stack weights");
}

const char* kv_dtype_name(KvCacheDtype d) {
  switch (d) {
    case KvCacheDtype::Fp8:
      return "fp8";
    case KvCacheDtype::Int8:
      return "int8";
    case KvCacheDtype::Auto:
      break;
  }
  return "auto";
}

std::string describe(const QuantInfo& q) {
  if (q.scheme == QuantScheme::None) return "none";
  const bool integer = q.scheme == QuantScheme::Int;
  std::string s = integer ? "int" + std::to_string(q.bits) + (q.has_zero_point ? " asymmetric" : " symmetric")
                          : "fp8 e4m3";
  switch (q.granularity) {
    case ScaleGranularity::Tensor: s += " per-tensor"; break;
    case ScaleGranularity::Channel: s += " per-channel"; break;
    case ScaleGranularity::Block: s += " block " + std::to_string(q.block_n) + "x" + std::to_string(q.block_k); break;
    case ScaleGranularity::Group: s += " group " + std::to_string(q.group_size); break;
  }
  if (q.act_order) s += " act-order";
  switch (q.act) {
    case ActQuant::None: s += ", weight-only"; break;
    case ActQuant::DynamicToken:
      s += integer ? ", dynamic per-token int8 activations" : ", dynamic per-token activations";
      break;
    case ActQuant::DynamicGroup: s += ", dynamic per-token-group activations"; break;
    case ActQuant::Static: s += ", static activation scale"; break;
  }
  return s;
}

void check_kv_scales(const KvCacheShape& shape) {
  for (const std::vector<float>* v : {&shape.k_scales, &shape.v_scales}) {
    if (v->empty()) continue;
    if (static_cast<int32_t>(v->size()) != shape.num_layers)
      throw Error(ErrorCode::InvalidArgument, "KV cache scales: " + std::to_string(v->size()) + " values for " +
                                                  std::to_string(shape.num_layers) + " layers");
    for (float f : *v)
      if (!std::isfinite(f) || f <= 0.0f)
        throw Error(ErrorCode::InvalidArgument,
                    "KV cache scales must be finite and positive, got " + std::to_string(f));
  }
}

Buffer Backend::load_scales(const float*, int64_t, int64_t) {
  throw Error(ErrorCode::Unsupported, name() + " backend does not run quantized weights");
}

Buffer Backend::load_indices(const int32_t*, int64_t) {
  throw Error(ErrorCode::Unsupported, name() + " backend does not run act-order (g_idx) weights");
}

void Backend::linear_swiglu(const Tensor& x, const Tensor& w_gate_up, Tensor scratch, Tensor out) {
  const int64_t inter = w_gate_up.rows / 2;
  linear(x, w_gate_up, nullptr, scratch);
  silu_mul(scratch.col_slice(0, inter), scratch.col_slice(inter, inter), out);
}

void Backend::linear_add_rms_norm(const Tensor& x, const Tensor& w, Tensor scratch, Tensor residual,
                                  const Tensor& norm_w, float eps, Tensor out) {
  linear(x, w, nullptr, scratch);
  add_rms_norm(residual, scratch, norm_w, eps, out);
}

void Backend::qk_norm_rope_write_kv(int32_t layer, Tensor q, Tensor k, const Tensor& v, const Tensor* q_norm,
                                    const Tensor* k_norm, float eps, int32_t num_q_heads, int32_t num_kv_heads,
                                    int32_t head_dim, const RopeConfig& rope) {
  if (q_norm || k_norm) {
    if (q.stride != q.cols || k.stride != k.cols)
      throw Error(ErrorCode::Internal, "per-head q/k norm needs contiguous q and k");
    Tensor qh = q.reshaped(head_dim), kh = k.reshaped(head_dim);
    if (q_norm) rms_norm(qh, *q_norm, eps, qh);
    if (k_norm) rms_norm(kh, *k_norm, eps, kh);
  }
  this->rope(q, k, num_q_heads, num_kv_heads, head_dim, rope);
  write_kv(layer, k, v);
}

void Backend::qkv_rope_write_kv(int32_t layer, const Tensor& x, const Tensor& w_qkv, const Tensor* bias, Tensor qkv,
                                const Tensor* q_norm, const Tensor* k_norm, float eps, int32_t num_q_heads,
                                int32_t num_kv_heads, int32_t head_dim, const RopeConfig& rope) {
  linear(x, w_qkv, bias, qkv);
  const int64_t D = head_dim;
  qk_norm_rope_write_kv(layer, qkv.col_slice(0, num_q_heads * D), qkv.col_slice(num_q_heads * D, num_kv_heads * D),
                        qkv.col_slice((num_q_heads + num_kv_heads) * D, num_kv_heads * D), q_norm, k_norm, eps,
                        num_q_heads, num_kv_heads, head_dim, rope);
}

void Backend::sample(const Tensor&, const std::vector<SampleRow>&, std::vector<SampledToken>&) {
  throw Error(ErrorCode::Unsupported, name() + " backend does not sample on the device");
}

void Backend::sample_launch(const Tensor&, const std::vector<SampleRow>&) {
  throw Error(ErrorCode::Unsupported, name() + " backend cannot overlap decode steps");
}

void Backend::sample_collect(std::vector<SampledToken>&) {
  throw Error(ErrorCode::Unsupported, name() + " backend cannot overlap decode steps");
}

}  // namespace inferdesk
