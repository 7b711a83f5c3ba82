// A Backend that forwards every call to another (the CPU backend) and, for the calibration of a
// quantizer, (1) hands the model replacement values for chosen weights as they load and (2)
// records the input rows of `linear` for chosen weights. The model's decoder on the CPU calls
// `linear` for every projection (the CPU backend stacks nothing and fuses nothing: the Backend
// defaults of the fused ops compose `linear`, so they are seen here too).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>

#include "core/backend/backend.h"
#include "core/quant/awq_math.h"

namespace inferdesk {

class CaptureBackend final : public Backend {
 public:
  // `replace`: weight name -> the tensor loaded instead (its memory must outlive the model: the
  // CPU backend reads F32 weights in place). `watch`: weights whose inputs are recorded.
  CaptureBackend(std::unique_ptr<Backend> inner, const std::map<std::string, HostTensor>* replace,
                 std::set<std::string> watch);

  // The input rows recorded for weight `name` so far, [rows, in_features] (empty when none).
  const Matrix& inputs(const std::string& name) const;

  DeviceKind kind() const override { return inner_->kind(); }
  std::string name() const override { return "capture(" + inner_->name() + ")"; }
  Buffer alloc(DType dtype, int64_t rows, int64_t cols) override { return inner_->alloc(dtype, rows, cols); }
  Buffer load_weight(const HostTensor& host, int64_t rows, int64_t cols) override;
  void fill_random(Tensor t, uint64_t seed, float scale) override { inner_->fill_random(t, seed, scale); }
  Buffer load_scales(const float* v, int64_t rows, int64_t cols) override { return inner_->load_scales(v, rows, cols); }
  Buffer load_indices(const int32_t* v, int64_t n) override { return inner_->load_indices(v, n); }
  bool supports_quant(const QuantInfo& q) const override { return inner_->supports_quant(q); }
  bool supports_kv_dtype(KvCacheDtype d) const override { return inner_->supports_kv_dtype(d); }
  void init_kv_cache(const KvCacheShape& shape) override { inner_->init_kv_cache(shape); }
  int64_t kv_block_bytes(const KvCacheShape& shape) const override { return inner_->kv_block_bytes(shape); }
  MemoryInfo memory_info() const override { return inner_->memory_info(); }
  DType activation_dtype() const override { return inner_->activation_dtype(); }
  bool wants_fused_weights() const override { return false; }  // every projection seen on its own
  StepPlan begin_step(const StepInput& step) override { return inner_->begin_step(step); }
  void end_step() override { inner_->end_step(); }
  void invalidate_graphs() override { inner_->invalidate_graphs(); }

  void embed(const Tensor& table, Tensor out) override { inner_->embed(table, out); }
  void rms_norm(const Tensor& x, const Tensor& w, float eps, Tensor out) override { inner_->rms_norm(x, w, eps, out); }
  void add_rms_norm(Tensor residual, const Tensor& x, const Tensor& w, float eps, Tensor out) override {
    inner_->add_rms_norm(residual, x, w, eps, out);
  }
  void linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor out) override;
  void rope(Tensor q, Tensor k, int32_t hq, int32_t hk, int32_t d, const RopeConfig& r) override {
    inner_->rope(q, k, hq, hk, d, r);
  }
  void write_kv(int32_t layer, const Tensor& k, const Tensor& v) override { inner_->write_kv(layer, k, v); }
  void attention(int32_t layer, const Tensor& q, const AttentionParams& p, Tensor out) override {
    inner_->attention(layer, q, p, out);
  }
  void silu_mul(const Tensor& gate, const Tensor& up, Tensor out) override { inner_->silu_mul(gate, up, out); }
  void add(Tensor inout, const Tensor& x) override { inner_->add(inout, x); }
  void gather_rows(const Tensor& x, Tensor out) override { inner_->gather_rows(x, out); }
  void moe_route(const Tensor& logits, int32_t top_k, bool normalize, Tensor ids, Tensor weights) override {
    inner_->moe_route(logits, top_k, normalize, ids, weights);
  }
  void moe_experts(int32_t layer, const Tensor& x, const std::vector<ExpertWeights>& experts, const Tensor& ids,
                   const Tensor& weights, Tensor out) override {
    inner_->moe_experts(layer, x, experts, ids, weights, out);
  }
  void sigmoid_gate_add(Tensor out, const Tensor& x, const Tensor& gate) override {
    inner_->sigmoid_gate_add(out, x, gate);
  }
  void init_expert_counters(int32_t layers, int32_t experts) override { inner_->init_expert_counters(layers, experts); }
  std::vector<int64_t> expert_counts() override { return inner_->expert_counts(); }
  void to_host(const Tensor& t, float* dst) override { inner_->to_host(t, dst); }
  void synchronize() override { inner_->synchronize(); }

 private:
  std::unique_ptr<Backend> inner_;
  const std::map<std::string, HostTensor>* replace_;
  std::set<std::string> watch_;
  std::map<const void*, std::string> watched_data_;  // a watched weight's backend data -> its name
  std::map<std::string, Matrix> inputs_;
};

}  // namespace inferdesk
