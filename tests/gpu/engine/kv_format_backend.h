// A Backend that forwards every op (the optional fused ops and device sampling too, so a CUDA
// backend behind it runs its own kernels) and gives the KV cache the engine asks for another dtype
// and per-layer scales: how the engine tests run an FP8 KV cache through Engine, whose options do
// not name the cache dtype. A virtual added to Backend later and not forwarded here falls back to
// its default, composed of forwarded ops.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/backend/backend.h"

namespace inferdesk::gputest {

class KvFormatBackend final : public Backend {
 public:
  // Layer l gets scales k_scale * (1 + l % 2) and v_scale * (1 + l % 2): per-layer values that
  // differ between neighbours, so a kernel reading another layer's scale is seen.
  KvFormatBackend(std::unique_ptr<Backend> inner, KvCacheDtype dtype, float k_scale, float v_scale)
      : b_(std::move(inner)), dtype_(dtype), k_scale_(k_scale), v_scale_(v_scale) {}

  KvCacheShape with_format(KvCacheShape s) const {
    s.dtype = dtype_;
    s.k_scales.clear();
    s.v_scales.clear();
    if (dtype_ == KvCacheDtype::Fp8)
      for (int32_t l = 0; l < s.num_layers; ++l) {
        s.k_scales.push_back(k_scale_ * static_cast<float>(1 + l % 2));
        s.v_scales.push_back(v_scale_ * static_cast<float>(1 + l % 2));
      }
    return s;
  }
  Backend& inner() { return *b_; }

  DeviceKind kind() const override { return b_->kind(); }
  std::string name() const override { return b_->name(); }
  Buffer alloc(DType dt, int64_t rows, int64_t cols) override { return b_->alloc(dt, rows, cols); }
  Buffer load_weight(const HostTensor& h, int64_t rows, int64_t cols) override {
    return b_->load_weight(h, rows, cols);
  }
  void fill_random(Tensor t, uint64_t seed, float scale) override { b_->fill_random(t, seed, scale); }
  Buffer load_scales(const float* v, int64_t rows, int64_t cols) override { return b_->load_scales(v, rows, cols); }
  bool supports_quant(const QuantInfo& q) const override { return b_->supports_quant(q); }
  bool supports_kv_dtype(KvCacheDtype d) const override { return b_->supports_kv_dtype(d); }
  void init_kv_cache(const KvCacheShape& s) override { b_->init_kv_cache(with_format(s)); }
  int64_t kv_block_bytes(const KvCacheShape& s) const override { return b_->kv_block_bytes(with_format(s)); }
  MemoryInfo memory_info() const override { return b_->memory_info(); }
  DType activation_dtype() const override { return b_->activation_dtype(); }
  bool wants_fused_weights() const override { return b_->wants_fused_weights(); }
  Buffer load_weight_rows(const std::vector<HostTensor>& parts, int64_t cols) override {
    return b_->load_weight_rows(parts, cols);
  }
  int64_t kv_cache_budget(double u) const override { return b_->kv_cache_budget(u); }

  StepPlan begin_step(const StepInput& s) override { return b_->begin_step(s); }
  void end_step() override { b_->end_step(); }
  void invalidate_graphs() override { b_->invalidate_graphs(); }

  void embed(const Tensor& table, Tensor out) override { b_->embed(table, out); }
  void rms_norm(const Tensor& x, const Tensor& w, float eps, Tensor out) override { b_->rms_norm(x, w, eps, out); }
  void add_rms_norm(Tensor r, const Tensor& x, const Tensor& w, float eps, Tensor out) override {
    b_->add_rms_norm(r, x, w, eps, out);
  }
  void linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor out) override {
    b_->linear(x, w, bias, out);
  }
  void rope(Tensor q, Tensor k, int32_t hq, int32_t hk, int32_t d, const RopeConfig& r) override {
    b_->rope(q, k, hq, hk, d, r);
  }
  void write_kv(int32_t layer, const Tensor& k, const Tensor& v) override { b_->write_kv(layer, k, v); }
  void attention(int32_t layer, const Tensor& q, const AttentionParams& p, Tensor out) override {
    b_->attention(layer, q, p, out);
  }
  void silu_mul(const Tensor& g, const Tensor& u, Tensor out) override { b_->silu_mul(g, u, out); }
  void add(Tensor inout, const Tensor& x) override { b_->add(inout, x); }
  void gather_rows(const Tensor& x, Tensor out) override { b_->gather_rows(x, out); }
  void linear_swiglu(const Tensor& x, const Tensor& w, Tensor scratch, Tensor out) override {
    b_->linear_swiglu(x, w, scratch, out);
  }
  void linear_add_rms_norm(const Tensor& x, const Tensor& w, Tensor scratch, Tensor residual, const Tensor& norm_w,
                           float eps, Tensor out) override {
    b_->linear_add_rms_norm(x, w, scratch, residual, norm_w, eps, out);
  }
  void qk_norm_rope_write_kv(int32_t layer, Tensor q, Tensor k, const Tensor& v, const Tensor* qn, const Tensor* kn,
                             float eps, int32_t hq, int32_t hk, int32_t d, const RopeConfig& r) override {
    b_->qk_norm_rope_write_kv(layer, q, k, v, qn, kn, eps, hq, hk, d, r);
  }
  void qkv_rope_write_kv(int32_t layer, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor qkv,
                         const Tensor* qn, const Tensor* kn, float eps, int32_t hq, int32_t hk, int32_t d,
                         const RopeConfig& r) override {
    b_->qkv_rope_write_kv(layer, x, w, bias, qkv, qn, kn, eps, hq, hk, d, r);
  }

  void moe_route(const Tensor& l, int32_t k, bool norm, Tensor ids, Tensor w) override {
    b_->moe_route(l, k, norm, ids, w);
  }
  void moe_experts(int32_t layer, const Tensor& x, const std::vector<ExpertWeights>& e, const Tensor& ids,
                   const Tensor& w, Tensor out) override {
    b_->moe_experts(layer, x, e, ids, w, out);
  }
  void sigmoid_gate_add(Tensor out, const Tensor& x, const Tensor& g) override { b_->sigmoid_gate_add(out, x, g); }
  void init_expert_counters(int32_t l, int32_t e) override { b_->init_expert_counters(l, e); }
  std::vector<int64_t> expert_counts() override { return b_->expert_counts(); }

  bool can_sample() const override { return b_->can_sample(); }
  void sample(const Tensor& logits, const std::vector<SampleRow>& rows, std::vector<SampledToken>& out) override {
    b_->sample(logits, rows, out);
  }
  bool can_chain_steps() const override { return b_->can_chain_steps(); }
  void sample_launch(const Tensor& logits, const std::vector<SampleRow>& rows) override {
    b_->sample_launch(logits, rows);
  }
  void sample_collect(std::vector<SampledToken>& out) override { b_->sample_collect(out); }
  void sample_abort() override { b_->sample_abort(); }

  void to_host(const Tensor& t, float* dst) override { b_->to_host(t, dst); }
  void synchronize() override { b_->synchronize(); }

 private:
  std::unique_ptr<Backend> b_;
  KvCacheDtype dtype_;
  float k_scale_, v_scale_;
};

}  // namespace inferdesk::gputest
