// CpuBackend's declaration, shared by the files that implement its ops (cpu_backend.cpp for
// memory and simple ops, cpu_linear.cpp, cpu_attention.cpp, cpu_moe.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/cpu/int_kernels.h"
#include "core/backend/cpu/kernels.h"
#include "core/backend/cpu/thread_pool.h"

namespace inferdesk::cpu {

// A 64-byte aligned, growable scratch area (contents are not preserved when it grows).
class Scratch {
 public:
  float* floats(int64_t n);

 private:
  struct Free {
    void operator()(float* p) const;
  };
  std::unique_ptr<float, Free> data_;
  int64_t size_ = 0;
};

// Zeroed memory for big tensors (activations, dummy weights, the KV cache). Blocks of 4 MiB and
// more are mapped anonymously at 2 MiB alignment with MADV_HUGEPAGE, so that streaming them
// (e.g. attention hopping between KV blocks of the pool) misses the TLB less; smaller ones come
// from aligned_alloc. Always 64-byte aligned. nullptr when the memory is not available.
void* alloc_zeroed(int64_t bytes);
void free_zeroed(void* p, int64_t bytes);

// Byte counters shared with the deleters of the buffers the backend hands out, so they stay valid
// if a buffer outlives the backend.
struct MemoryCounters {
  std::atomic<int64_t> weights{0};
  std::atomic<int64_t> activations{0};
};

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const CpuBackendOptions& options);

  DeviceKind kind() const override { return DeviceKind::Cpu; }
  std::string name() const override;

  Buffer alloc(DType dtype, int64_t rows, int64_t cols) override;
  Buffer load_weight(const HostTensor& host, int64_t rows, int64_t cols) override;
  void fill_random(Tensor t, uint64_t seed, float scale) override;
  Buffer load_scales(const float* values, int64_t rows, int64_t cols) override;
  Buffer load_indices(const int32_t* values, int64_t n) override;
  bool supports_quant(const QuantInfo& q) const override;
  // Fp8: K/V are rounded through E4M3 with the layer's scale as they are written (the reference
  // numerics of an FP8 cache); the cache itself stays float32.
  bool supports_kv_dtype(KvCacheDtype d) const override {
    return d == KvCacheDtype::Auto || d == KvCacheDtype::Fp8 || d == KvCacheDtype::Int8;
  }
  void init_kv_cache(const KvCacheShape& shape) override;
  int64_t kv_block_bytes(const KvCacheShape& shape) const override;
  MemoryInfo memory_info() const override;

  StepPlan begin_step(const StepInput& step) override;

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

  void moe_route(const Tensor& router_logits, int32_t top_k, bool normalize, Tensor ids, Tensor weights) override;
  void moe_experts(int32_t layer, const Tensor& x, const std::vector<ExpertWeights>& experts, const Tensor& ids,
                   const Tensor& weights, Tensor out) override;
  void sigmoid_gate_add(Tensor out, const Tensor& x, const Tensor& gate) override;
  void init_expert_counters(int32_t num_layers, int32_t num_experts) override;
  std::vector<int64_t> expert_counts() override;

  void to_host(const Tensor& t, float* dst) override;
  void synchronize() override {}

 private:
  // Runs fn(row_begin, row_end) over [0, rows) on the pool when the work is big enough.
  void for_rows(int64_t rows, int64_t cost_per_row, const std::function<void(int64_t, int64_t)>& fn);
  // out[T, O] = x[T, K] @ w^T (+ bias), threaded.
  void run_linear(const LinearArgs& a);
  // linear() of a quantized weight (w.quant set): cpu_quant_linear.cpp.
  void quant_linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor out);
  // quant_linear() of QuantScheme::Int weights: cpu_int_linear.cpp. int8_linear is its W8A8 part
  // (bias [N] floats, work T + ceil(T*K/4) floats).
  void int_linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor out);
  void int8_linear(const Tensor& x, const Tensor& w, const float* bias, float* work, Tensor out);
  // The AVX2 / AVX-512 integer kernels (cpu_int_fast.cpp); the scalar backend keeps the reference.
  bool int_fast_path(const QuantInfo& q) const;
  void int_weight_fast(const Tensor& x, const Tensor& w, const float* bias, Tensor out);
  void int8_rows_fast(const Int8Args& a, int64_t N);
  void run_int_rows(int64_t N, const std::function<void(int64_t, int64_t)>& fn);
  // out [n, w.rows] = x [n, w.cols] @ w^T for one expert's gathered rows, quantized or not.
  void expert_linear(const float* x, int64_t x_stride, int64_t n, const Tensor& w, float* out);
  const std::vector<float>& rope_table(const RopeConfig& rope, int32_t half);
  void check_attention_step(const AttentionParams& p) const;

  ThreadPool pool_;
  KernelTable k_;
  IntKernelTable ik_;
  std::shared_ptr<MemoryCounters> counters_;

  StepInput step_;
  uint64_t step_id_ = 0;

  // The KV cache: per layer, K then V, each [num_blocks, num_kv_heads, block_size, head_dim]
  // floats. Head-major inside a block (KvCacheShape leaves that to the backend), so attention
  // streams one kv head's keys and values of a block as one contiguous run of
  // block_size * head_dim floats instead of gathering rows num_kv_heads * head_dim apart.
  KvCacheShape kv_shape_;
  std::shared_ptr<float> kv_;
  int64_t kv_layer_elems_ = 0;  // floats of K (or V) per layer

  std::vector<int64_t> expert_counts_;
  int32_t counter_layers_ = 0;
  int32_t counter_experts_ = 0;

  // Rope cos/sin for the current step: [T][half] each, for one RopeConfig.
  uint64_t rope_step_id_ = ~0ull;
  std::vector<float> rope_inv_freq_;
  float rope_scaling_ = 0.0f;
  std::vector<float> rope_cs_;  // [T][2][half]: cos then sin

  Scratch scratch_threads_;  // per-thread scratch
  Scratch scratch_moe_;      // gathered rows and expert intermediates
  Scratch scratch_quant_;    // quantized activations and their scales
  Scratch scratch_int_;      // packed activations of the integer kernels
};

}  // namespace inferdesk::cpu
