// The CUDA backend's class (private to cuda/backend): the Backend seam over the parts that own the
// state, each in its own file. cuda/README.md draws how a decode step goes through them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/util/error.h"
#include "cuda/backend/context.h"
#include "cuda/backend/gpu_sampler.h"
#include "cuda/backend/kernel_policy.h"
#include "cuda/backend/kv_cache.h"
#include "cuda/backend/moe_runner.h"
#include "cuda/backend/rope_tables.h"
#include "cuda/backend/step_timer.h"
#include "cuda/backend/step_upload.h"
#include "cuda/backend/weight_upload.h"
#include "cuda/cuda_backend.h"

namespace inferdesk::cuda {

class CudaBackend : public Backend {
 public:
  explicit CudaBackend(const CudaBackendOptions& options);
  ~CudaBackend() override;

  DeviceKind kind() const override { return DeviceKind::Cuda; }
  std::string name() const override { return "cuda"; }

  Buffer alloc(DType dtype, int64_t rows, int64_t cols) override;
  Buffer load_weight(const HostTensor& host, int64_t rows, int64_t cols) override;
  Buffer load_weight_rows(const std::vector<HostTensor>& parts, int64_t cols) override;
  void fill_random(Tensor t, uint64_t seed, float scale) override;
  Buffer load_scales(const float* values, int64_t rows, int64_t cols) override {
    return weights_.load_scales(values, rows, cols);
  }
  bool supports_quant(const QuantInfo& q) const override {
    return q.scheme == QuantScheme::None || KernelPolicy::fp8_supported(q);
  }
  void init_kv_cache(const KvCacheShape& shape) override;
  int64_t kv_block_bytes(const KvCacheShape& shape) const override { return KvCache::block_bytes(shape); }
  int64_t kv_cache_budget(double memory_utilization) const override;
  MemoryInfo memory_info() const override;
  DType activation_dtype() const override { return DType::BF16; }
  bool wants_fused_weights() const override { return true; }

  StepPlan begin_step(const StepInput& step) override;
  void end_step() override;
  void invalidate_graphs() override { ctx_.graphs.invalidate(); }

  // Ops (cuda_ops.cpp): each takes its operands settled from the kernel policy.
  void embed(const Tensor& table, Tensor out) override;
  void rms_norm(const Tensor& x, const Tensor& w, float eps, Tensor out) override;
  void add_rms_norm(Tensor residual, const Tensor& x, const Tensor& w, float eps, Tensor out) override;
  void linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor out) override;
  void rope(Tensor q, Tensor k, int32_t num_q_heads, int32_t num_kv_heads, int32_t head_dim,
            const RopeConfig& rope) override;
  void write_kv(int32_t layer, const Tensor& k, const Tensor& v) override;
  void attention(int32_t layer, const Tensor& q, const AttentionParams& p, Tensor out) override;
  void silu_mul(const Tensor& gate, const Tensor& up, Tensor out) override;
  void add(Tensor inout, const Tensor& x) override;
  void gather_rows(const Tensor& x, Tensor out) override;
  void linear_swiglu(const Tensor& x, const Tensor& w_gate_up, Tensor scratch, Tensor out) override;
  void linear_add_rms_norm(const Tensor& x, const Tensor& w, Tensor scratch, Tensor residual, const Tensor& norm_w,
                           float eps, Tensor out) override;
  void qkv_rope_write_kv(int32_t layer, const Tensor& x, const Tensor& w_qkv, const Tensor* bias, Tensor qkv,
                         const Tensor* q_norm, const Tensor* k_norm, float eps, int32_t num_q_heads,
                         int32_t num_kv_heads, int32_t head_dim, const RopeConfig& rope) override;
  void qk_norm_rope_write_kv(int32_t layer, Tensor q, Tensor k, const Tensor& v, const Tensor* q_norm,
                             const Tensor* k_norm, float eps, int32_t num_q_heads, int32_t num_kv_heads,
                             int32_t head_dim, const RopeConfig& rope) override;

  void moe_route(const Tensor& router_logits, int32_t top_k, bool normalize, Tensor ids, Tensor weights) override;
  void moe_experts(int32_t layer, const Tensor& x, const std::vector<ExpertWeights>& experts, const Tensor& ids,
                   const Tensor& weights, Tensor out) override;
  void sigmoid_gate_add(Tensor out, const Tensor& x, const Tensor& gate) override;
  void init_expert_counters(int32_t num_layers, int32_t num_experts) override {
    moe_.init_counters(num_layers, num_experts);
  }
  std::vector<int64_t> expert_counts() override { return moe_.counts(); }

  bool can_sample() const override { return true; }
  void sample(const Tensor& logits, const std::vector<SampleRow>& rows, std::vector<SampledToken>& out) override;
  bool can_chain_steps() const override { return true; }
  void sample_launch(const Tensor& logits, const std::vector<SampleRow>& rows) override {
    sampler_.launch(logits, rows);
  }
  void sample_collect(std::vector<SampledToken>& out) override { sampler_.collect(out); }
  void sample_abort() override { sampler_.abort(); }

  void to_host(const Tensor& t, float* dst) override;
  void synchronize() override { ctx_.synchronize(); }

  CudaMoePathCounts moe_path_counts() const { return moe_.path_counts(); }
  int64_t chained_steps() const { return chained_steps_; }
  int64_t fused_norms() const { return policy_.fused_norms(); }

 private:
  // What begin_step decided for the step being built.
  struct StepShape {
    int32_t rows = 0;      // token rows (padded to the graph bucket)
    int32_t num_seqs = 0;  // (padded)
    int32_t max_query_len = 0;
    bool decode_only = false;  // every sequence has one query row
    int32_t splits = 1;        // decode attention splits
  };
  static StepShape classify(const StepInput& step);
  void take_chained_tokens(const StepInput& step);
  // The decode-attention partials; growing it invalidates graphs (an error inside a capture).
  void ensure_attention_workspace(int32_t num_seqs, int32_t num_heads, int32_t head_dim, int32_t splits);

  CudaContext ctx_;  // first: outlives every part below
  StepTimer timer_;
  KernelPolicy policy_;
  WeightUploader weights_;
  KvCache kv_;
  StepUploader steps_;
  GpuSampler sampler_;
  MoeRunner moe_;
  RopeTables rope_tables_;
  StepShape shape_;
  int32_t num_heads_seen_ = 0;  // query heads of the last attention call (sizes graph workspaces)
  DeviceBuffer attn_workspace_;
  DeviceBuffer split_counters_;  // decode arrival counters, zero between launches
  int64_t chained_steps_ = 0;    // steps that took their tokens from the last sampling
};

// `backend` as a CudaBackend, for the counters of cuda_backend.h; Error(InvalidArgument) naming
// `who` for any other backend.
inline const CudaBackend& as_cuda_backend(const Backend& backend, const char* who) {
  const auto* b = dynamic_cast<const CudaBackend*>(&backend);
  if (!b) throw Error(ErrorCode::InvalidArgument, std::string(who) + ": not a CUDA backend");
  return *b;
}

}  // namespace inferdesk::cuda
