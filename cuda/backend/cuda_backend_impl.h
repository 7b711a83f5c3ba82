// The CUDA backend's class (private to cuda/backend). See cuda/cuda_backend.h for the design.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/util/error.h"
#include "cuda/backend/gemm.h"
#include "cuda/cuda_backend.h"
#include "cuda/kernels/attention.h"
#include "cuda/kernels/common.h"
#include "cuda/kernels/elementwise.h"
#include "cuda/kernels/gemv.h"
#include "cuda/kernels/launch.h"
#include "cuda/kernels/moe.h"
#include "cuda/kernels/rope_kv.h"
#include "cuda/kernels/sampling.h"
#include "cuda/kernels/sm90a/wide_gemm.h"
#include "cuda/kernels/wide_norm.h"

namespace inferdesk::cuda {

// Throws Error(Internal/OutOfMemory) naming `what` when e is not cudaSuccess.
void check_cuda(cudaError_t e, const char* what);

// Pinned host memory, grown on demand.
class PinnedBuffer {
 public:
  ~PinnedBuffer();
  void* get(size_t bytes);

 private:
  void* p_ = nullptr;
  size_t size_ = 0;
};

// Step metadata at fixed device addresses (so captured graphs read the current step's values).
// One packed int32 array; capacities grow (moving it invalidates graphs).
struct StepBuffers {
  int32_t max_tokens = 0, max_seqs = 0, max_blocks = 0;
  int32_t* base = nullptr;  // device
  // Offsets (in int32) of each array in the packed buffer.
  int32_t* token_ids = nullptr;
  int32_t* positions = nullptr;
  int32_t* slots = nullptr;
  int32_t* logit_rows = nullptr;
  int32_t* query_start = nullptr;
  int32_t* query_len = nullptr;
  int32_t* context_len = nullptr;
  int32_t* block_table_start = nullptr;
  int32_t* block_tables = nullptr;
  size_t total_ints() const {
    return static_cast<size_t>(max_tokens) * 4 + static_cast<size_t>(max_seqs) * 4 + max_blocks;
  }
};

// One MoE layer's experts as the kernels see them (cuda_moe.cpp): device arrays of the experts'
// gate, up and down pointers, built from the ExpertWeights views on first use (outside any graph
// capture) and rebuilt only when the views change.
struct MoeLayerTable {
  std::vector<const void*> host;  // gate[E], up[E], down[E] as last uploaded
  void* dev = nullptr;            // the same on the device
  int64_t hidden = 0, inter = 0;
  bool stacked = false;   // every expert's up directly follows its gate: one GEMM for both
  bool small_ok = false;  // sizes and alignment allow the small-batch kernels
};

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
  void init_kv_cache(const KvCacheShape& shape) override;
  int64_t kv_block_bytes(const KvCacheShape& shape) const override;
  int64_t kv_cache_budget(double memory_utilization) const override;
  MemoryInfo memory_info() const override;
  DType activation_dtype() const override { return DType::BF16; }
  bool wants_fused_weights() const override { return true; }

  StepPlan begin_step(const StepInput& step) override;
  void end_step() override;
  void invalidate_graphs() override;

  void embed(const Tensor& table, Tensor out) override;
  void rms_norm(const Tensor& x, const Tensor& w, float eps, Tensor out) override;
  void add_rms_norm(Tensor residual, const Tensor& x, const Tensor& w, float eps,
                    Tensor out) override;
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
  void qkv_rope_write_kv(int32_t layer, const Tensor& x, const Tensor& w_qkv, const Tensor* bias,
                         Tensor qkv, const Tensor* q_norm, const Tensor* k_norm, float eps,
                         int32_t num_q_heads, int32_t num_kv_heads, int32_t head_dim,
                         const RopeConfig& rope) override;
  void qk_norm_rope_write_kv(int32_t layer, Tensor q, Tensor k, const Tensor& v,
                             const Tensor* q_norm, const Tensor* k_norm, float eps,
                             int32_t num_q_heads, int32_t num_kv_heads, int32_t head_dim,
                             const RopeConfig& rope) override;

  void moe_route(const Tensor& router_logits, int32_t top_k, bool normalize, Tensor ids,
                 Tensor weights) override;
  void moe_experts(int32_t layer, const Tensor& x, const std::vector<ExpertWeights>& experts,
                   const Tensor& ids, const Tensor& weights, Tensor out) override;
  void sigmoid_gate_add(Tensor out, const Tensor& x, const Tensor& gate) override;
  void init_expert_counters(int32_t num_layers, int32_t num_experts) override;
  std::vector<int64_t> expert_counts() override;
  CudaMoePathCounts moe_path_counts() const { return moe_path_counts_; }

  bool can_sample() const override { return true; }
  void sample(const Tensor& logits, const std::vector<SampleRow>& rows,
              std::vector<SampledToken>& out) override;
  bool can_chain_steps() const override { return true; }
  void sample_launch(const Tensor& logits, const std::vector<SampleRow>& rows) override;
  void sample_collect(std::vector<SampledToken>& out) override;
  void sample_abort() override;
  int64_t chained_steps() const { return chained_steps_; }
  int64_t fused_norms() const { return fused_norms_; }

  void to_host(const Tensor& t, float* dst) override;
  void synchronize() override;

 private:
  void* device_alloc(size_t bytes, const char* what);
  // Device scratch `p` of `capacity` bytes grown (after the stream drains) to `alloc_bytes` when
  // it holds less than `need`. Returns true when it moved.
  bool grow_device(void*& p, size_t& capacity, size_t need, size_t alloc_bytes, const char* what);
  // The decode-attention partials; growing it invalidates graphs (an error inside a capture).
  void ensure_attention_workspace(int32_t num_seqs, int32_t num_heads, int32_t head_dim,
                                  int32_t splits);
  void upload(const HostTensor& host, bf16* dst);
  const float* inv_freq_device(const RopeConfig& rope);
  int graph_bucket(int32_t n) const;  // 0: no graph for n rows
  void ensure_step_capacity(int32_t tokens, int32_t seqs, int32_t blocks);
  int32_t decode_splits(int32_t num_seqs, int32_t num_kv_heads) const;
  // Mixture of experts (cuda_moe.cpp).
  int32_t moe_small_max_rows() const;  // rows the capturable small-batch path serves (0: none)
  // Rows the capturable grouped path serves in every MoE layer seen so far (0: none, or no layer
  // seen yet); a MoE step of more rows takes the large path and is not captured.
  int32_t moe_grouped_max_rows() const;
  // The grouped path's pair bound for a layer of `num_experts` experts (0: no grouped path).
  int64_t moe_grouped_pairs(int32_t num_experts) const;
  const MoeLayerTable& moe_table(int32_t layer, const std::vector<ExpertWeights>& experts);
  void moe_experts_grouped(const MoeLayerTable& table, int64_t max_pairs, const MoeStepArgs& step);
  void moe_experts_large(const MoeLayerTable& table, const MoeStepArgs& step);
  int64_t moe_reserved_bytes() const;  // scratch the MoE paths may still allocate

  CudaBackendOptions options_;
  int sm_count_ = 0;
  cudaStream_t stream_ = nullptr;
  Launch launch_;  // the kernels' launches: on stream_, PDL as CudaBackendOptions::pdl
  std::unique_ptr<Gemm> gemm_;
  PinnedBuffer staging_[2];
  cudaEvent_t staging_done_[2] = {nullptr, nullptr};
  // Recorded after each step's metadata upload from step_host_: the next begin_step waits for it
  // before refilling the pinned buffer (a step without sampled rows ends without a synchronisation).
  cudaEvent_t step_uploaded_ = nullptr;
  bool step_upload_pending_ = false;
  // The step upload runs on upload_stream_ once the previous step's forward no longer reads the
  // step buffers (forward_done_, recorded by end_step), so it overlaps that step's sampling; the
  // compute stream waits for it (step_uploaded_) before the forward. INFERDESK_UPLOAD_STREAM=0:
  // the upload on the compute stream, between the steps.
  cudaStream_t upload_stream_ = nullptr;
  cudaEvent_t forward_done_ = nullptr;
  bool forward_recorded_ = false;  // some step reached end_step: forward_done_ is recorded
  bool step_open_ = false;         // between begin_step and end_step (still set: that step failed)
  void* convert_scratch_ = nullptr;  // device staging for F16/F32 weights
  size_t convert_scratch_bytes_ = 0;

  // KV cache.
  KvCacheShape kv_shape_{};
  bf16* kv_ = nullptr;
  int64_t kv_layer_elems_ = 0;  // elements of K (or V) of one layer
  // A layer's K and V caches (K and V of layer l follow each other in kv_).
  bf16* k_cache(int32_t layer) const { return kv_ + (int64_t{layer} * 2) * kv_layer_elems_; }
  bf16* v_cache(int32_t layer) const { return k_cache(layer) + kv_layer_elems_; }

  // Step state.
  StepBuffers sb_;
  PinnedBuffer step_host_;
  int32_t rows_ = 0;          // rows of the current step (padded)
  bool decode_only_ = false;  // every sequence has one query row
  int32_t max_query_len_ = 0;
  int32_t num_seqs_ = 0;      // (padded)
  int32_t splits_ = 1;
  int32_t decode_waves_ = 4;  // decode_splits aims at this many waves of attention blocks
  int32_t decode_min_keys_ = kDecodeMinKeysPerSplit;  // PagedAttentionArgs::min_keys_per_split
  DecodeLoad decode_small_grid_load_ = DecodeLoad::Registers;  // PagedAttentionArgs::small_grid_load
  // PagedAttentionArgs::large_grid_load: the tensor-core decode kernel for grids of many blocks
  // (INFERDESK_DECODE_MMA=0: the CUDA-core pipeline).
  DecodeLoad decode_large_grid_load_ = DecodeLoad::Mma;
  int32_t decode_small_grid_heads_ = 2;  // PagedAttentionArgs::small_grid_heads_per_block
  int32_t decode_max_heads_ = 8;         // PagedAttentionArgs::max_heads_per_block
  int32_t num_heads_seen_ = 0;  // query heads of the last attention call (sizes graph workspaces)
  void* attn_workspace_ = nullptr;
  size_t attn_workspace_bytes_ = 0;
  void* split_counters_ = nullptr;  // decode arrival counters, zero between launches
  size_t split_counters_bytes_ = 0;

  // Decode-batch GEMMs through the wide GEMMs (whole tiles per block), by
  // INFERDESK_WIDE_GEMM=<mask>: 1 the SwiGLU gate/up projection (wide_gemm_swiglu: SiLU * up fused
  // in its epilogue, Llama-8B batch 64 +2-3% against cuBLASLt and silu_mul), 8 the plain ones (o,
  // qkv, down) with K split over the 2 blocks of a cluster (wide_gemm_ksplit: batch 64 +6% over
  // mask 1). Default 9 on devices that run them.
  // Returns false when it does not serve the call.
  bool try_wide(const Mat& x, const bf16* w, int64_t n, int64_t k, const bf16* bias, const Mat& y, bool swiglu,
                const WideNorm* norm = nullptr);
  int32_t wide_mask_ = 9;
  // linear_add_rms_norm on the wide k-split GEMM (WideNorm, wide_norm.h): its `out` is left deferred,
  // unscaled rows whose scale the partial sums in norm_ss_ give, until the next linear,
  // linear_swiglu (or qkv_rope_write_kv) with it as x applies the scale in its epilogue, or
  // settle() scales it in place for any other reader. CudaBackendOptions::fused_norm.
  struct DeferredNorm {
    const void* h = nullptr;  // none when null
    int64_t rows = 0;
    int32_t tiles = 0, norm_k = 0;
    float eps = 0.0f;
  };
  DeferredNorm deferred_;
  bool fused_norm_ = true;
  int64_t fused_norms_ = 0;  // linear_add_rms_norm calls served fused
  float* norm_ss_ = nullptr;  // [sm_count_][kWideNormRows] partial sums
  // The consumer half for x when x is the deferred tensor (else null).
  const WideNorm* deferred_for(const Tensor& x, WideNorm& storage) const;
  // Scales the deferred tensor in place if t aliases it (any reader other than a fusing consumer).
  void settle(const Tensor& t);
  // INFERDESK_WIDE_MIN_ROWS: fewest rows wide_gemm serves (33: at 32 rows it was slower than cuBLASLt
  // and silu_mul, Llama-8B batch 32 6,079 against 6,210 tok/s; at 64 faster, docs/PERF.md).
  int32_t wide_min_rows_ = 33;

  // CUDA graphs per decode bucket.
  std::map<int, cudaGraphExec_t> graphs_;
  std::map<int, int> eager_runs_;  // decode steps run eagerly per bucket before capturing one
  int capturing_ = 0;  // bucket being captured, 0 when none
  int replaying_ = 0;

  // Rope tables uploaded once per distinct RopeConfig (keyed by its address and size).
  std::map<std::pair<const void*, size_t>, float*> inv_freq_;

  // Sampling.
  void* sample_workspace_ = nullptr;
  size_t sample_workspace_bytes_ = 0;
  void* sample_io_ = nullptr;  // device: row params, penalties, outputs
  size_t sample_io_bytes_ = 0;
  // Samplings launched and not yet collected, oldest first (at most two: overlapped decode
  // steps). Each owns one of two pinned buffers, alternately: a launch packs its parameters while
  // the previous launch's upload and download may still be waiting in the stream.
  struct PendingSample {
    int slot = 0;
    int32_t rows = 0, vocab = 0;
    size_t in_bytes = 0, out_tok = 0, out_lp = 0, out_top = 0;  // host/device layout
    std::vector<int32_t> num_logprobs;                            // per row
  };
  PinnedBuffer sample_host_[2];
  // Slot i of the device buffer is sample_io_ + i * sample_io_slot_bytes_ (parameters, then
  // outputs). Uploads and downloads go through copy_stream_, off the compute stream: the
  // parameters' upload runs while the step's forward does, and the step after needs not wait for
  // the download of the tokens.
  size_t sample_io_slot_bytes_ = 0;
  cudaStream_t copy_stream_ = nullptr;
  // Whether the copies use copy_stream_ (the default: H200, 2026-11-30, Llama-3.2-1B batch 1
  // 1,113 -> 1,120 and 1,112 -> 1,118 tok/s in two runs) or stream_, in line with the kernels
  // (INFERDESK_SAMPLING_COPY_STREAM=0).
  bool sampling_copy_stream_ = true;
  cudaEvent_t sample_params_up_[2] = {nullptr, nullptr};  // slot i's parameters are on the device
  cudaEvent_t sample_computed_[2] = {nullptr, nullptr};   // slot i's sampling kernels are done
  cudaEvent_t sample_done_[2] = {nullptr, nullptr};       // the download of slot i has landed
  std::deque<PendingSample> pending_samples_;
  int next_sample_slot_ = 0;
  // Device: the token ids of the last launch (a step with StepInput::tokens_from_last_sample copies
  // its rows' tokens from here, in stream order after that sampling).
  const int32_t* last_sample_tokens_ = nullptr;
  int32_t last_sample_rows_ = 0;
  int64_t chained_steps_ = 0;  // steps that took their tokens from last_sample_tokens_

  // INFERDESK_STEP_TIMING=1: per step, on the stream, the time from begin_step to the end of the
  // forward (upload + graph or eager kernels), from there to the sampled ids (sampling), and the
  // stream's idle time from the previous step's sampling to this begin_step's first command (gap),
  // against the wall time between begin_steps; summed and printed when the backend is destroyed.
  // Events live in a ring and are read kTimingRing steps later, so the timing never waits for the
  // GPU (overlapped steps stay overlapped).
  static constexpr int kTimingRing = 8;
  struct StepEvents {
    cudaEvent_t start = nullptr, forward = nullptr, end = nullptr;
    bool forward_set = false, end_set = false;
  };
  bool step_timing_ = false;
  StepEvents timing_[kTimingRing];  // step i in slot i % kTimingRing
  int64_t timing_step_ = 0;         // steps begun
  int64_t timing_accounted_ = 0;    // steps [0, this) added to the sums
  double forward_ms_ = 0, sampling_ms_ = 0, gap_ms_ = 0, wall_ms_ = 0;
  int64_t timed_steps_ = 0, timed_gaps_ = 0;
  std::chrono::steady_clock::time_point last_step_wall_{};
  // Adds the steps before `until` not yet added (their slots, and the previous step's, intact).
  void account_steps(int64_t until);
  StepEvents& current_step_events() { return timing_[(timing_step_ - 1) % kTimingRing]; }

  // Mixture of experts (cuda_moe.cpp). Everything here is used from the engine thread only, in
  // stream order on stream_; the large-batch path synchronises stream_ once per chunk of tokens.
  std::map<int32_t, MoeLayerTable> moe_tables_;
  unsigned long long* expert_counters_ = nullptr;  // [counter_layers_ * counter_experts_]
  int32_t counter_layers_ = 0, counter_experts_ = 0;
  // Set by init_expert_counters for a model with more than one expert: decode steps of more rows
  // than the small-batch and grouped paths serve run eagerly (the large path synchronises, so it
  // cannot be captured).
  bool moe_model_ = false;
  // Cleared when some layer's experts cannot use the small-batch and grouped kernels (sizes or
  // alignment): then no MoE step is captured at all.
  bool moe_small_ok_ = true;
  void* moe_small_scratch_ = nullptr;  // act + slot outputs of the small path (graph-stable)
  size_t moe_small_scratch_bytes_ = 0;
  void* moe_large_scratch_ = nullptr;  // one chunk of the large path (moves only between steps)
  size_t moe_large_scratch_bytes_ = 0;
  // The grouped path's sort arrays, activations and expert outputs, sized for its pair bound
  // (graph-stable: allocated outside captures; growing it invalidates the graphs).
  void* moe_grouped_scratch_ = nullptr;
  size_t moe_grouped_scratch_bytes_ = 0;
  // Min over the MoE layers seen of (the layer's grouped pair bound / its top_k); -1: none seen.
  int32_t moe_grouped_rows_ = -1;
  PinnedBuffer moe_offsets_host_;
  CudaMoePathCounts moe_path_counts_;

  // Accounting (bytes).
  int64_t weight_bytes_ = 0;
  int64_t activation_bytes_ = 0;
  int64_t kv_bytes_ = 0;
};

Mat as_mat(const Tensor& t);

// `backend` as a CudaBackend, for the counters of cuda_backend.h; Error(InvalidArgument) naming
// `who` for any other backend.
inline const CudaBackend& as_cuda_backend(const Backend& backend, const char* who) {
  const auto* b = dynamic_cast<const CudaBackend*>(&backend);
  if (!b) throw Error(ErrorCode::InvalidArgument, std::string(who) + ": not a CUDA backend");
  return *b;
}

}  // namespace inferdesk::cuda
