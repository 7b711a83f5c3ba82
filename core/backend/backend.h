// The Backend interface: the seam between the engine (core/) and the hardware that runs a model.
//
// A backend owns device memory (activations, weights, the paged KV cache) and implements a small
// set of ops that the architecture files in core/model/ compose into a forward pass. The CPU
// backend (core/backend/cpu) is the reference every other backend is tested against; the CUDA
// backend (cuda/) implements the same interface.
//
// Ops are issued in order from one thread (the engine thread). A backend may run them
// asynchronously (the CUDA backend queues them on a stream so a decode step can be captured as a
// CUDA graph); results become visible to the host only through to_host()/sample(), which
// synchronise. All shapes are validated by the caller (core/model), not by the op.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/backend/quant.h"
#include "core/sample/sampling_params.h"
#include "core/util/dtype.h"
#include "core/util/host_tensor.h"

namespace inferdesk {

enum class DeviceKind { Cpu, Cuda };

// A 2-D row-major view of backend memory. Vectors (norm weights, biases) have rows == 1.
// stride is the number of elements between the starts of consecutive rows (>= cols).
struct Tensor {
  void* data = nullptr;
  DType dtype = DType::F32;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t stride = 0;
  // Set on quantized linear weights only (quant.h): how the values decode. Slicing a quantized
  // weight is not supported (its scales would not follow).
  const QuantInfo* quant = nullptr;

  bool empty() const { return data == nullptr; }
  // Input features of a weight: cols, or K of a packed 4-bit weight (quant.h).
  int64_t in_features() const { return quant && quant->in_features > 0 ? quant->in_features : cols; }
  size_t element_size() const { return dtype_size(dtype); }
  // Rows [r0, r0+n).
  Tensor row_slice(int64_t r0, int64_t n) const {
    Tensor t = *this;
    t.data = static_cast<char*>(data) + r0 * stride * static_cast<int64_t>(element_size());
    t.rows = n;
    return t;
  }
  // Columns [c0, c0+n) of every row (stride unchanged).
  Tensor col_slice(int64_t c0, int64_t n) const {
    Tensor t = *this;
    t.data = static_cast<char*>(data) + c0 * static_cast<int64_t>(element_size());
    t.cols = n;
    return t;
  }
  // Same contiguous memory seen as [rows*cols/new_cols, new_cols]; requires stride == cols.
  Tensor reshaped(int64_t new_cols) const {
    Tensor t = *this;
    t.rows = rows * cols / new_cols;
    t.cols = new_cols;
    t.stride = new_cols;
    return t;
  }
};

// Owning handle for a tensor allocated by a backend (or a non-owning one for weights the backend
// reads in place, e.g. the CPU backend's mmapped BF16 weights).
class Buffer {
 public:
  Buffer() = default;
  Buffer(Tensor t, std::shared_ptr<void> owner) : tensor_(t), owner_(std::move(owner)) {}
  const Tensor& tensor() const { return tensor_; }
  Tensor& tensor() { return tensor_; }
  bool empty() const { return tensor_.empty(); }
  // Makes this a quantized weight: `q` says how it decodes; `scales` (and for Int weights the
  // optional `zeros` and `g_idx`) own the memory q.scales (q.zeros, q.g_idx) point to and live as
  // long as this buffer.
  void set_quant(const QuantInfo& q, const Buffer& scales, const Buffer& zeros = {}, const Buffer& g_idx = {}) {
    auto info = std::make_shared<QuantInfo>(q);
    info->scales = scales.tensor().data;
    info->zeros = zeros.empty() ? nullptr : zeros.tensor().data;
    info->g_idx = g_idx.empty() ? nullptr : static_cast<const int32_t*>(g_idx.tensor().data);
    quant_ = std::move(info);
    scales_owner_ = {scales.owner_, zeros.owner_, g_idx.owner_};
    tensor_.quant = quant_.get();
  }

 private:
  Tensor tensor_;
  std::shared_ptr<void> owner_;
  std::shared_ptr<const QuantInfo> quant_;
  std::vector<std::shared_ptr<void>> scales_owner_;
};

// Geometry of the paged KV cache: per layer, K and V of num_blocks blocks, each holding
// block_size tokens x num_kv_heads x head_dim values. A token's slot is
// block_id * block_size + offset_in_block. How a block is laid out inside is the backend's choice
// (the CPU backend's is documented in core/backend/cpu/cpu_backend_impl.h); callers only ever
// address the cache through slots and block ids.
// Fp8 stores K and V as E4M3 times a per-layer scale (k_scales / v_scales, 1.0 when empty):
// stored = sat_e4m3(value * (1 / scale)), read back as stored * scale.
// Int8 stores each token's K (and V) of each KV head as 8-bit codes with a scale and zero point
// computed online from that head_dim-long row (LMDeploy's per-token, per-head asymmetric scheme):
// s = max((max - min) / 255, kKvInt8MinScale), z = -min / s, q = clamp(floor(x / s + z + 0.5), 0,
// 255), read back as (q - z) * s; float32 math.
enum class KvCacheDtype : uint8_t { Auto, Fp8, Int8 };
inline constexpr float kKvInt8MinScale = 1e-8f;  // a constant row still gets a finite scale
// "auto", "fp8", "int8" (messages, JSON).
const char* kv_dtype_name(KvCacheDtype d);
struct KvCacheShape {
  int32_t num_layers = 0;
  int32_t num_blocks = 0;
  int32_t block_size = 16;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  KvCacheDtype dtype = KvCacheDtype::Auto;  // Auto: the backend's activation precision
  std::vector<float> k_scales;              // [num_layers] for Fp8, or empty (all 1.0)
  std::vector<float> v_scales;
};

// One sequence's part of a step. Its tokens are rows [query_start, query_start + query_len) of the
// step; after the step the cache holds context_len tokens of it (cached before + query_len).
struct StepSeq {
  int32_t query_start = 0;
  int32_t query_len = 0;
  int32_t context_len = 0;
  int32_t block_table_start = 0;  // index into StepInput::block_tables
  int32_t num_blocks = 0;
};

// Everything about a step that is not a tensor: built on the host by the engine, uploaded once per
// step by begin_step().
struct StepInput {
  std::vector<int32_t> token_ids;     // [T]
  std::vector<int32_t> positions;     // [T] absolute position of each token in its sequence
  std::vector<int32_t> slot_mapping;  // [T] cache slot each token's K/V is written to
  std::vector<StepSeq> seqs;          // sequences in row order
  std::vector<int32_t> block_tables;  // concatenated block tables of seqs
  std::vector<int32_t> logit_rows;    // rows whose logits are wanted, in output order
  int32_t block_size = 16;
  // The token of row i is the token the last Backend::sample_launch() sampled for its row i (still
  // on the device; token_ids holds -1 there). Only for decode steps whose rows are exactly that
  // sampling's rows, in order, and only on backends whose can_chain_steps() is true.
  bool tokens_from_last_sample = false;
  int32_t num_tokens() const { return static_cast<int32_t>(token_ids.size()); }
};

// Rotary embedding: inv_freq has rotary_dim/2 entries (llama3 / linear scaling already applied by
// core/layers/rope); q and k rows are rotated "rotate_half" style (HF Llama/NeoX convention) and
// multiplied by attention_scaling.
struct RopeConfig {
  std::vector<float> inv_freq;
  int32_t rotary_dim = 0;
  float attention_scaling = 1.0f;
};

struct AttentionParams {
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  float scale = 1.0f;
  int32_t sliding_window = 0;  // 0: full causal attention; else a query at position p sees keys in (p - window, p]
};

// Weights of one expert of a MoE layer (SwiGLU: down(silu(gate x) * up x)).
struct ExpertWeights {
  Tensor gate;  // [inter, hidden]
  Tensor up;    // [inter, hidden]
  Tensor down;  // [hidden, inter]
};

// What begin_step() decided for a step. A backend may pad a step to a size it has a captured CUDA
// graph for (rows >= num_tokens; padding rows have slot -1 and sit in padding sequences), and may
// replay that graph instead of executing the ops: then the model issues no ops at all and the
// graph runs (and produces the logits) at end_step().
struct StepPlan {
  int32_t rows = 0;        // token rows the ops run over
  int32_t logit_rows = 0;  // logit rows produced (>= the step's logit_rows.size())
  bool replay = false;
};

// One logits row to sample on the device (see Backend::sample).
struct SampleRow {
  const SamplingParams* params = nullptr;
  uint64_t seed = 0;                    // the request's seed
  uint64_t counter = 0;                 // tokens the request generated before this one (with seed: the draw)
  std::span<const int32_t> prompt_ids;  // for penalties
  std::span<const int32_t> output_ids;
};

struct SampledToken {
  int32_t token = 0;
  float logprob = 0.0f;           // raw log-probability
  std::vector<TokenLogprob> top;  // params->logprobs best, best first
};

struct MemoryInfo {
  int64_t device_total = 0;  // bytes; 0 when not applicable
  int64_t device_used = 0;
  int64_t weights = 0;
  int64_t kv_cache = 0;
  int64_t activations = 0;
};

// Throws InvalidArgument unless the per-layer scales are empty or num_layers finite positive
// values each.
void check_kv_scales(const KvCacheShape& shape);

class Backend {
 public:
  virtual ~Backend() = default;

  virtual DeviceKind kind() const = 0;
  virtual std::string name() const = 0;

  // ---- memory ----
  virtual Buffer alloc(DType dtype, int64_t rows, int64_t cols) = 0;
  // Make a weight available to ops. A backend may keep a view of host memory (the host memory must
  // then outlive the model) or copy/convert it to device memory. rows/cols give the 2-D view
  // (1-D tensors are [1, n]).
  virtual Buffer load_weight(const HostTensor& host, int64_t rows, int64_t cols) = 0;
  // Fill a tensor with uniform random values in [-scale, scale] (dummy-weight benchmarks); FP8
  // tensors get random finite codes of magnitude <= scale.
  virtual void fill_random(Tensor t, uint64_t seed, float scale) = 0;
  // F32 scales of a quantized weight ([rows, cols] row-major floats on the host) in backend
  // memory. The default throws Unsupported.
  virtual Buffer load_scales(const float* values, int64_t rows, int64_t cols);
  // I32 [1, n] indices in backend memory (an Int weight's g_idx). The default throws Unsupported.
  virtual Buffer load_indices(const int32_t* values, int64_t n);
  // Whether linear() and the fused ops run weights quantized this way, and the KV cache dtype.
  // Loading checks both first, so an unsupported scheme fails before any memory is used.
  virtual bool supports_quant(const QuantInfo& q) const { return q.scheme == QuantScheme::None; }
  virtual bool supports_kv_dtype(KvCacheDtype d) const { return d == KvCacheDtype::Auto; }
  virtual void init_kv_cache(const KvCacheShape& shape) = 0;
  // Bytes one KV block takes over all layers for this geometry (used to size the pool).
  virtual int64_t kv_block_bytes(const KvCacheShape& shape) const = 0;
  virtual MemoryInfo memory_info() const = 0;

  // Activation tensors the model allocates for this backend (F32 on the CPU, BF16 on a GPU). The
  // residual stream and the logits are always F32.
  virtual DType activation_dtype() const { return DType::F32; }
  // Whether models should stack q/k/v (and gate/up) weights into one matrix each, so one GEMM
  // computes them (load_weight_rows). Default no.
  virtual bool wants_fused_weights() const { return false; }
  // One weight made of `parts` stacked by rows (each [rows_i, cols], same dtype). Only called when
  // wants_fused_weights() is true; the default throws Unsupported.
  virtual Buffer load_weight_rows(const std::vector<HostTensor>& parts, int64_t cols);
  // Bytes of device memory still free for the KV cache after weights and activations, given the
  // fraction of the device the engine may use (0 for backends that do not manage device memory:
  // the engine then uses its kv_cache_bytes option).
  virtual int64_t kv_cache_budget(double memory_utilization) const { return 0; }

  // ---- step ----
  // Uploads the step. The default plan runs the ops over exactly the step's rows.
  virtual StepPlan begin_step(const StepInput& step) = 0;
  // Ends the step's forward (a backend that captures graphs instantiates or launches one here).
  virtual void end_step() {}
  // The model moved or resized its activation buffers: captured graphs are stale.
  virtual void invalidate_graphs() {}

  // ---- ops (shapes: x is [T, n] for the step's T token rows unless said otherwise) ----
  // out[i] = table[token_ids[i]]
  virtual void embed(const Tensor& table, Tensor out) = 0;
  // out = x / rms(x) * w, row-wise over cols. x and out may be the same tensor.
  virtual void rms_norm(const Tensor& x, const Tensor& w, float eps, Tensor out) = 0;
  // residual += x; out = rms_norm(residual). Fused residual add.
  virtual void add_rms_norm(Tensor residual, const Tensor& x, const Tensor& w, float eps, Tensor out) = 0;
  // out = x @ w^T (+ bias). x [T, in], w [out, in], bias [1, out] or null.
  virtual void linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor out) = 0;
  // Rotate q [T, Hq*D] and k [T, Hk*D] in place at the step's positions.
  virtual void rope(Tensor q, Tensor k, int32_t num_q_heads, int32_t num_kv_heads, int32_t head_dim,
                    const RopeConfig& rope) = 0;
  // Write k, v [T, Hk*D] of `layer` into the cache at the step's slot_mapping.
  virtual void write_kv(int32_t layer, const Tensor& k, const Tensor& v) = 0;
  // Causal paged attention of q [T, Hq*D] over the cache of `layer` (incl. this step's K/V).
  virtual void attention(int32_t layer, const Tensor& q, const AttentionParams& p, Tensor out) = 0;
  // out = silu(gate) * up
  virtual void silu_mul(const Tensor& gate, const Tensor& up, Tensor out) = 0;
  // inout += x
  virtual void add(Tensor inout, const Tensor& x) = 0;
  // out[j] = x[logit_rows[j]]
  virtual void gather_rows(const Tensor& x, Tensor out) = 0;

  // ---- fused ops (defaults compose the ops above) ----
  // out = silu(x @ gate^T) * (x @ up^T) where w_gate_up stacks gate [I, in] over up [I, in];
  // scratch is [T, 2I] of the activation dtype.
  virtual void linear_swiglu(const Tensor& x, const Tensor& w_gate_up, Tensor scratch, Tensor out);
  // residual += x @ w^T, then out = rms_norm(residual) * norm_w (a projection closing a residual
  // branch and the next norm). scratch [T, w.rows] of the activation dtype receives x @ w^T where the
  // backend composes the two. A backend may leave `out` deferred (the CUDA backend's wide path: its
  // rows not yet scaled): then it may only be read as the x of the next linear, linear_swiglu or
  // qkv_rope_write_kv, which resolve it, until written again. The default: linear, add_rms_norm.
  virtual void linear_add_rms_norm(const Tensor& x, const Tensor& w, Tensor scratch, Tensor residual,
                                   const Tensor& norm_w, float eps, Tensor out);
  // Per-head RMSNorm of q and k (when q_norm / k_norm are given, Qwen3), rotary embedding of q and
  // k in place, then K and V written to the cache of `layer`. q, k, v may be column slices of one
  // fused qkv tensor (the default needs contiguous q and k when norms are given).
  virtual void qk_norm_rope_write_kv(int32_t layer, Tensor q, Tensor k, const Tensor& v, const Tensor* q_norm,
                                     const Tensor* k_norm, float eps, int32_t num_q_heads, int32_t num_kv_heads,
                                     int32_t head_dim, const RopeConfig& rope);
  // The fused q|k|v projection followed by qk_norm_rope_write_kv: qkv = x @ w_qkv^T (+ bias), its
  // q | k | v column slices [Hq D | Hk D | Hk D] then as above. A backend may do both in one
  // kernel (the CUDA backend for decode rows); the default composes linear and the op above.
  virtual void qkv_rope_write_kv(int32_t layer, const Tensor& x, const Tensor& w_qkv, const Tensor* bias, Tensor qkv,
                                 const Tensor* q_norm, const Tensor* k_norm, float eps, int32_t num_q_heads,
                                 int32_t num_kv_heads, int32_t head_dim, const RopeConfig& rope);

  // ---- mixture of experts ----
  // Softmax over router logits [T, E], pick top_k (ties: lower expert id first), renormalise the
  // chosen weights to sum 1 when normalize is true. ids [T, k] I32, weights [T, k] F32.
  virtual void moe_route(const Tensor& router_logits, int32_t top_k, bool normalize, Tensor ids, Tensor weights) = 0;
  // out = sum_j weights[t, j] * expert_{ids[t, j]}(x[t]); also adds the token counts per expert to
  // the counters of `layer` (see expert_counts).
  virtual void moe_experts(int32_t layer, const Tensor& x, const std::vector<ExpertWeights>& experts, const Tensor& ids,
                           const Tensor& weights, Tensor out) = 0;
  // out += sigmoid(gate[t, 0]) * x[t]  (Qwen2-MoE shared expert).
  virtual void sigmoid_gate_add(Tensor out, const Tensor& x, const Tensor& gate) = 0;
  // Counters of routed tokens, [num_layers * num_experts], cumulative since init_expert_counters.
  virtual void init_expert_counters(int32_t num_layers, int32_t num_experts) = 0;
  virtual std::vector<int64_t> expert_counts() = 0;

  // ---- sampling on the device ----
  // Whether sample() is implemented; otherwise the engine copies logits to the host and samples
  // there (core/sample).
  virtual bool can_sample() const { return false; }
  // Samples one token per logits row (row i with rows[i]); only ids and requested log-probs come
  // back. Same pipeline as core/sample's Sampler; the draw depends on (seed, counter) only.
  virtual void sample(const Tensor& logits, const std::vector<SampleRow>& rows, std::vector<SampledToken>& out);

  // ---- overlapped decode steps (optional; the engine's EngineOptions::overlap_steps) ----
  // A backend that can chain steps lets the engine launch decode step N+1 before step N's tokens
  // reach the host: sample_launch() enqueues step N's sampling and returns at once;
  // begin_step() of a step with StepInput::tokens_from_last_sample takes the token of its row i
  // from row i of the last sample_launch(), on the device; sample_collect() waits for the oldest
  // launched sampling not yet collected and returns its tokens (as sample() would have). At most
  // two launches are outstanding. The defaults throw Unsupported (can_chain_steps() is false).
  virtual bool can_chain_steps() const { return false; }
  virtual void sample_launch(const Tensor& logits, const std::vector<SampleRow>& rows);
  virtual void sample_collect(std::vector<SampledToken>& out);
  // Forgets launched, uncollected samplings (after a failed step); their results are dropped.
  virtual void sample_abort() {}

  // ---- results ----
  // Copy (converting to float) a tensor to host memory of rows*cols floats. Synchronises.
  virtual void to_host(const Tensor& t, float* dst) = 0;
  virtual void synchronize() = 0;
};

// The CPU backend (core/backend/cpu, library inferdesk_backend); num_threads <= 0: one per core.
// core/backend/cpu/cpu_backend.h has the overload with more options (kernel ISA for tests).
std::unique_ptr<Backend> make_cpu_backend(int num_threads = 0);

}  // namespace inferdesk
