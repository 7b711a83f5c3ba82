// A Backend that forwards every required op to another backend (the CPU backend in the tests), so
// a test can change one aspect — what it says it wants, how it samples — and keep the arithmetic.
// The optional fused ops are not forwarded: they use Backend's defaults, composed of the
// forwarded ops.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/backend/backend.h"

namespace inferdesk::test {

class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(std::unique_ptr<Backend> inner) : b_(std::move(inner)) {}

  DeviceKind kind() const override { return b_->kind(); }
  std::string name() const override { return "forwarding-" + b_->name(); }
  Buffer alloc(DType dt, int64_t rows, int64_t cols) override { return b_->alloc(dt, rows, cols); }
  Buffer load_weight(const HostTensor& h, int64_t rows, int64_t cols) override {
    return b_->load_weight(h, rows, cols);
  }
  void fill_random(Tensor t, uint64_t seed, float scale) override { b_->fill_random(t, seed, scale); }
  Buffer load_scales(const float* v, int64_t rows, int64_t cols) override { return b_->load_scales(v, rows, cols); }
  Buffer load_indices(const int32_t* v, int64_t n) override { return b_->load_indices(v, n); }
  bool supports_quant(const QuantInfo& q) const override { return b_->supports_quant(q); }
  void init_kv_cache(const KvCacheShape& s) override { b_->init_kv_cache(s); }
  int64_t kv_block_bytes(const KvCacheShape& s) const override { return b_->kv_block_bytes(s); }
  MemoryInfo memory_info() const override { return b_->memory_info(); }
  DType activation_dtype() const override { return b_->activation_dtype(); }
  StepPlan begin_step(const StepInput& s) override { return b_->begin_step(s); }
  void end_step() override { b_->end_step(); }
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
  void to_host(const Tensor& t, float* dst) override { b_->to_host(t, dst); }
  void synchronize() override { b_->synchronize(); }

 protected:
  Backend& inner() { return *b_; }

 private:
  std::unique_ptr<Backend> b_;
};

}  // namespace inferdesk::test
