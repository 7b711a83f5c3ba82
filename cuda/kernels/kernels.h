// Launchers of the CUDA backend's kernels: the contract between cuda/backend (which owns memory,
// streams and CUDA graphs) and the kernel files in cuda/kernels. Every launcher takes a Launch
// (launch.h) and only enqueues work on launch.stream (no allocation, no synchronisation, no host
// reads of device data), so every one of them may be captured in a CUDA graph. Sizes are validated by the caller; launchers throw
// inferdesk::Error(Internal) only for a configuration they do not implement (e.g. a head_dim
// without an instantiation) and for launch errors.
//
// Conventions
// - Matrices are row-major with a row stride in elements (stride >= cols), so column slices of a
//   fused tensor (q/k/v of one qkv GEMM output) can be passed without copies.
// - Activations are BF16, except the residual stream and logits, which are F32. Where a launcher
//   takes `Dt`, the tensor may be either.
// - The paged KV cache of one layer is two arrays (K and V) of BF16 laid out
//   [num_blocks][num_kv_heads][block_size][head_dim]; the slot of a token is
//   block_id * block_size + offset. A slot of -1 means "padding row: write nothing".
// - Step metadata (token ids, positions, slots, per-sequence arrays, block tables) lives in
//   device buffers at fixed addresses uploaded by begin_step.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/launch.h"

namespace inferdesk::cuda {

using bf16 = __nv_bfloat16;

enum class Dt : int32_t { F32 = 0, BF16 = 1 };

// A strided 2-D device matrix of F32 or BF16.
struct Mat {
  void* data = nullptr;
  Dt dt = Dt::BF16;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t stride = 0;
};

// ---------------------------------------------------------------- elementwise (elementwise.cu)

// out[i, :] = table[token_ids[i], :] for i < rows(out). table BF16 [V, H]; out F32 or BF16.
void embed_rows(const Mat& table, const int32_t* token_ids, Mat out, const Launch& launch);

// out = x / sqrt(mean(x^2) + eps) * w, row-wise. x, out F32 or BF16 (may alias); w BF16 [1, cols].
void rms_norm(const Mat& x, const bf16* w, float eps, Mat out, const Launch& launch);

// residual += x; out = rms_norm(residual) * w. residual F32; x, out BF16 (or F32).
void add_rms_norm(Mat residual, const Mat& x, const bf16* w, float eps, Mat out,
                  const Launch& launch);

// out = silu(gate) * up, all BF16 [T, I] (strided).
void silu_mul(const Mat& gate, const Mat& up, Mat out, const Launch& launch);

// inout += x (any F32/BF16 combination, same shape).
void add_inplace(Mat inout, const Mat& x, const Launch& launch);

// out[j, :] = x[rows_idx[j], :] for j < rows(out); x/out F32 or BF16.
void gather_rows(const Mat& x, const int32_t* rows_idx, Mat out, const Launch& launch);

// Uniform values in [-scale, scale] from a counter-based hash of (seed, element index); the same
// seed gives the same values whatever the launch configuration.
void fill_random(Mat t, uint64_t seed, float scale, const Launch& launch);

// dst (BF16, contiguous n elements) = convert(src) where src is `n` contiguous elements of
// F32 (src_kind 0), BF16 (1) or F16 (2) already in device memory.
void convert_to_bf16(const void* src, int32_t src_kind, bf16* dst, int64_t n, const Launch& launch);

// ------------------------------------------------------------ rope + KV write (rope_kv.cu)

struct RopeKvArgs {
  bf16* q = nullptr;         // [T, num_q_heads * head_dim], row stride q_stride (rotated in place)
  int64_t q_stride = 0;
  bf16* k = nullptr;         // [T, num_kv_heads * head_dim], stride k_stride (rotated in place)
  int64_t k_stride = 0;
  const bf16* v = nullptr;   // [T, num_kv_heads * head_dim], stride v_stride
  int64_t v_stride = 0;
  const bf16* q_norm = nullptr;  // [head_dim] per-head RMSNorm weights (qwen3), or null
  const bf16* k_norm = nullptr;
  float eps = 1e-6f;
  const float* inv_freq = nullptr;  // [rotary_dim / 2] device
  int32_t rotary_dim = 0;           // rotate the first rotary_dim dims of each head (rotate_half)
  float attention_scaling = 1.0f;   // multiplies the rotated dims (llama3/yarn style)
  const int32_t* positions = nullptr;     // [T]
  const int32_t* slot_mapping = nullptr;  // [T]; -1: do not write
  bf16* k_cache = nullptr;  // this layer's cache
  bf16* v_cache = nullptr;
  int32_t num_tokens = 0, num_q_heads = 0, num_kv_heads = 0, head_dim = 0, block_size = 16;
};
// Per token and head: optional per-head RMSNorm of q and k (before rotation, as in Qwen3), rotary
// embedding of q and k in place (angle = position * inv_freq[i], computed in F32), then K (rotated)
// and V written into the cache at slot_mapping. Same maths as the CPU backend's rms_norm + rope +
// write_kv.
void qk_norm_rope_write_kv(const RopeKvArgs& a, const Launch& launch);

// ---------------------------------------------------- wide GEMM (sm90a/wide_gemm.cu, Hopper)

// Whether the current device runs the sm_90a kernels (sm90a/, built for sm_90a alone; the
// definition is sm90a/hopper_available.cu). Their launchers need it; callers fall back otherwise.
bool hopper_kernels_available();

// Token rows the wide GEMMs serve at most (the wgmma M).
constexpr int32_t kWideGemmMaxRows = 64;

// A residual add + RMSNorm split across two wide GEMMs (the backend's linear_add_rms_norm):
// - Producer (k-split with `resid`): resid[M, N] (F32) += bf16(x @ W^T); y = bf16(resid *
//   gamma) per column, the row not yet scaled; ss_out[tile][64] = sum over the tile's N columns of
//   resid^2 per row (tiles of wide_gemm_ksplit_tiles; one writer each: deterministic).
// - Consumer (k-split or SwiGLU with `ss_in`, x = that y): every output row r is scaled by
//   1 / sqrt(sum_t ss_in[t][r] / norm_k + eps) before the SwiGLU or the store; since the scale is
//   per row it commutes with the product: the result is rmsnorm(resid) * gamma @ W^T.
struct WideNorm {
  float* resid = nullptr;  // producer
  int64_t ld_resid = 0;
  const bf16* gamma = nullptr;
  float* ss_out = nullptr;
  const float* ss_in = nullptr;  // consumer
  int32_t ss_tiles = 0;
  int32_t norm_k = 0;
  float eps = 0.0f;
};
// Rows of partial sums the producer writes per token row: one per tile (64 floats each).
constexpr int32_t kWideNormRows = 64;
// A WideNorm's scaling done by itself (elementwise.cu), for a consumer that is not a wide GEMM:
// h [M <= 64, K] BF16 rows *= the consumer's scale (the same partials in the same order).
void wide_norm_scale_rows(Mat h, const float* ss, int32_t tiles, int32_t norm_k, float eps, const Launch& launch);

// Decode-batch SwiGLU GEMM: y[M, N / 2] = silu(x @ Wg^T) * (x @ Wu^T) where W stacks Wg [N / 2, K]
// over Wu. Every block owns whole output tiles (H gate and H up rows) over the whole K, a single
// wave of blocks on `sms` SMs; deterministic, a row's result independent of M. M <= 64,
// K % 64 == 0, BF16; needs hopper_kernels_available() and wide_gemm_swiglu_supported().
// wide_gemm_swiglu_half: the tile's half width H for that N on `sms` SMs (0: no instantiated width
// gives a grid of 3/4 to 1 wave). norm: the consumer half of a WideNorm (ss_in).
int32_t wide_gemm_swiglu_half(int64_t n, int32_t sms);
bool wide_gemm_swiglu_supported(const Mat& x, const bf16* w, int64_t n, int64_t k, const Mat& y, int32_t sms);
void wide_gemm_swiglu(const Mat& x, const bf16* w, int64_t n, int64_t k, Mat y, int32_t sms, const Launch& launch,
                      const WideNorm* norm = nullptr);
// Decode-batch GEMM y[M, N] = x[M, K] @ W[N, K]^T with each tile's K split over the two blocks of a
// cluster (each block receives the other's sums of one warpgroup's rows in its shared memory and
// finishes those rows): tiles of 2 H = 64 or 96 rows, two 64-k panels per stage, K % 256 == 0, a
// wave of clusters on `sms` SMs; M <= 64, BF16, needs hopper_kernels_available() and
// wide_gemm_ksplit_supported(). wide_gemm_ksplit_half: H for that N (0: none fits).
// norm: either half of a WideNorm (its tiles: wide_gemm_ksplit_tiles(n, sms)).
int32_t wide_gemm_ksplit_half(int64_t n, int32_t sms);
int32_t wide_gemm_ksplit_tiles(int64_t n, int32_t sms);
bool wide_gemm_ksplit_supported(const Mat& x, const bf16* w, int64_t n, int64_t k, const Mat& y, int32_t sms);
void wide_gemm_ksplit(const Mat& x, const bf16* w, int64_t n, int64_t k, Mat y, int32_t sms, const Launch& launch,
                      const WideNorm* norm = nullptr);

// ----------------------------------------------------------------- attention (attention_*.cu)

// Default fewest keys per split of a decode context (PagedAttentionArgs::min_keys_per_split);
// H200 sweep 2026-11-30: 64 beat 16, 32 and 128 at batch 1 (docs/PERF.md).
constexpr int32_t kDecodeMinKeysPerSplit = 64;

// Decode kernel K/V loading: straight into registers, one iteration at a time (few blocks,
// latency-bound); through a cp.async pipeline in shared memory (many blocks, bandwidth-bound); or
// Mma: the tensor-core kernel (attention_decode_mma.cu: tiles of 16 keys through a cp.async
// pipeline per warp, Q K^T and P V on mma.sync, up to 16 query heads per block; many blocks, with
// far fewer instructions per byte than Pipelined). Mma serves head_dim 64 and 128 with a 16-byte
// aligned cache; other launches asking for it run Pipelined.
enum class DecodeLoad { Auto, Registers, Pipelined, Mma };

struct PagedAttentionArgs {
  const bf16* q = nullptr;  // [T, num_heads * head_dim], stride q_stride
  int64_t q_stride = 0;
  bf16* out = nullptr;      // [T, num_heads * head_dim], stride out_stride
  int64_t out_stride = 0;
  const bf16* k_cache = nullptr;  // this layer, layout above
  const bf16* v_cache = nullptr;
  // Per sequence s < num_seqs: its query rows are [query_start[s], query_start[s] + query_len[s]),
  // the cache holds context_len[s] tokens of it (incl. this step's), its block table is
  // block_tables[block_table_start[s] ...]. Query row j of s sits at position
  // context_len[s] - query_len[s] + j. A sequence with context_len 0 is padding: its rows get 0.
  const int32_t* query_start = nullptr;
  const int32_t* query_len = nullptr;
  const int32_t* context_len = nullptr;
  const int32_t* block_table_start = nullptr;
  const int32_t* block_tables = nullptr;
  int32_t num_seqs = 0;
  int32_t max_query_len = 0;  // host-known upper bound over seqs (prefill grid)
  int32_t num_heads = 0, num_kv_heads = 0, head_dim = 0, block_size = 16;
  float scale = 1.0f;
  int32_t sliding_window = 0;  // 0: full causal; else a query at p sees keys in (p - window, p]
  // Decode: each sequence's context is cut into up to num_splits parts (flash-decoding), merged by
  // the last part to finish. Partials live in `workspace` (see decode_workspace_bytes); with
  // num_splits > 1, split_counters holds num_seqs * num_heads arrival counters that must be zero
  // before a launch and are zero again after it (so one zeroed array serves every launch and
  // graph replay, whatever its num_seqs).
  int32_t num_splits = 1;
  // a context of n visible keys uses min(num_splits, ceil(n / this)) splits
  int32_t min_keys_per_split = kDecodeMinKeysPerSplit;
  void* workspace = nullptr;
  int32_t* split_counters = nullptr;
  // Decode: how K/V reach the registers (attention_decode.cu). Auto picks by grid size:
  // large_grid_load for many blocks, small_grid_load for few; the tests force each.
  DecodeLoad decode_load = DecodeLoad::Auto;
  DecodeLoad small_grid_load = DecodeLoad::Registers;
  // the load Auto uses for grids of many blocks (Pipelined or Mma). H200, 2026-11-30,
  // bench_gpu_attention, Pipelined -> Mma: Llama-8B 64 x 256 keys 26.0 -> 21.3 us, 64 x 1,024
  // 82.9 -> 73.1, 256 x 192 67.9 -> 63.8, 32 x 4,096 172.4 -> 137.0; Llama-1B 64 x 1,024 44.4 -> 38.1.
  DecodeLoad large_grid_load = DecodeLoad::Mma;
  // Decode: query heads of one kv group a thread block serves (8, 4, 2 or 1; a group larger than
  // this is cut into chunks, each block reading its kv head's K/V again). Fewer heads per block
  // means more blocks with less work each: for grids of a few blocks (batch 1, 8 query heads per kv
  // head) latency rather than bandwidth. Under Auto, grids of few blocks use
  // small_grid_heads_per_block instead when it is smaller: 2 by default (H200, 2026-11-30,
  // bench_gpu_attention, one sequence of 256 keys: Llama-8B 8.6 -> 6.4 us with 2 heads per block
  // (5.4 with 1), Qwen3-30B-A3B 13.6 -> 8.6 (4) -> 6.4 us (2); engine batch 1 with 2 against the
  // group size: 8B 228 -> 234 tok/s, 1B 1,074 -> 1,114, Qwen3-30B-A3B 291 -> 341).
  // The Mma load serves up to 16 heads per block (a group of 4 or 8 in one block); a value below 8
  // here (or small_grid_heads_per_block, for Auto's grids of few blocks) caps it too.
  int32_t max_heads_per_block = 8;
  int32_t small_grid_heads_per_block = 2;
};
// Causal attention for any mix of query lengths (prefill chunks attending to earlier cached
// blocks, and decode rows), FlashAttention-2 style online softmax, GQA. head_dim 32/64/128/256.
void paged_attention_prefill(const PagedAttentionArgs& a, const Launch& launch);
// Decode only (every query_len is 1 or the sequence is padding): one thread block per
// (sequence, kv head, split) serving all query heads of the group, 16-byte loads.
void paged_attention_decode(const PagedAttentionArgs& a, const Launch& launch);
size_t decode_workspace_bytes(int32_t num_seqs, int32_t num_heads, int32_t head_dim,
                              int32_t num_splits);


// ------------------------------------------------------------------- sampling (sampling.cu)

// One logits row to sample; mirrors inferdesk::SamplingParams (core/sample) and follows the same
// pipeline as the CPU Sampler (core/sample/sampler.h): penalties, then greedy argmax (temperature
// < 1e-5, lowest id wins ties) or temperature, min_p, top-k (ties kept), top-p, and a draw from the
// renormalised distribution. The draw uses Philox keyed by (seed, counter), so a request's tokens
// do not depend on what else is in the batch. Reported log-probabilities (the token's and the
// top list's) are log_softmax of the RAW logits (before penalties and temperature).
struct SampleRowDev {
  float temperature = 1.0f, top_p = 1.0f, min_p = 0.0f;
  float repetition_penalty = 1.0f, presence_penalty = 0.0f, frequency_penalty = 0.0f;
  int32_t top_k = 0;         // <= 0: off
  int32_t num_logprobs = 0;  // 0..20 top entries to report
  uint64_t seed = 0;
  uint64_t counter = 0;      // tokens the request generated before this one
  // Penalty entries [penalty_start, penalty_start + penalty_count) of the batch arrays: each is a
  // distinct token of prompt ∪ output (repetition penalty applies to all of them) with its count
  // in the output (frequency/presence apply where count > 0).
  int32_t penalty_start = 0, penalty_count = 0;
};
constexpr int32_t kMaxTopLogprobs = 20;
struct SampleArgs {
  const float* logits = nullptr;  // [rows, vocab], row stride logits_stride (F32)
  int64_t logits_stride = 0;
  // Only ids below vocab are candidates; with vocab < logits_stride (a padded vocabulary) the
  // columns beyond it are never read, so they count as -inf for the draw and the log-probs.
  int32_t rows = 0, vocab = 0;
  const SampleRowDev* row_params = nullptr;  // device [rows]
  const int32_t* penalty_tokens = nullptr;   // device
  const int32_t* penalty_counts = nullptr;   // device
  void* workspace = nullptr;  // sample_workspace_bytes(rows, vocab), 16-byte aligned (cudaMalloc)
  int32_t* out_token = nullptr;              // device [rows]
  float* out_logprob = nullptr;              // device [rows]
  int32_t* out_top_ids = nullptr;            // device [rows, kMaxTopLogprobs]
  float* out_top_logprobs = nullptr;         // device [rows, kMaxTopLogprobs]
};
void sample_rows(const SampleArgs& a, const Launch& launch);
size_t sample_workspace_bytes(int32_t rows, int32_t vocab);

// ----------------------------------------------------------------------- GEMV (gemv.cu)

// Small-batch y = x @ W^T (+ bias) for rows(x) <= kGemvMaxRows, memory-bound path: W BF16
// [N, K] contiguous, x BF16 [M, K], y BF16 or F32 [M, N]; bias BF16 [N] or null.
constexpr int32_t kGemvMaxRows = 8;
void gemv(const Mat& x, const bf16* w, int64_t n, int64_t k, const bf16* bias, Mat y,
          const Launch& launch);
// Same with the SwiGLU epilogue: W stacks gate [I, K] over up [I, K]; out[m, i] =
// silu(x.gate_i) * (x.up_i), BF16 [M, I].
void gemv_swiglu(const Mat& x, const bf16* w_gate_up, int64_t inter, int64_t k, Mat out,
                 const Launch& launch);
// The fused q|k|v projection for decode rows (<= kGemvMaxRows) with qk_norm_rope_write_kv's work
// (without per-head norms) in its epilogue: y = x @ W^T (+ bias) with W [(Hq + 2 Hk) D, K], q and k
// heads rotated (rotate_half over the whole head, angle position * inv_freq[i] in F32, times
// attention_scaling), k and v heads written to the cache at slot_mapping (-1: not written). y keeps
// the rotated q and k and v. One kernel instead of two per layer.
struct GemvRope {
  const float* inv_freq = nullptr;  // [head_dim / 2]
  float attention_scaling = 1.0f;
  const int32_t* positions = nullptr;     // [M]
  const int32_t* slot_mapping = nullptr;  // [M]
  bf16* k_cache = nullptr;  // this layer's [blocks][num_kv_heads][block_size][head_dim]
  bf16* v_cache = nullptr;
  int32_t num_q_heads = 0, num_kv_heads = 0, head_dim = 0, block_size = 16;
};
// Whether gemv_qkv_rope serves these arguments (BF16, 16-byte aligned W and x rows, K % 8 == 0,
// head_dim % 16 == 0, rows <= kGemvMaxRows, y [M, (Hq + 2 Hk) head_dim]).
bool gemv_qkv_rope_supported(const Mat& x, const bf16* w, int64_t k, const Mat& y, const GemvRope& r);
// Throws Error(Unsupported) where gemv_qkv_rope_supported is false.
void gemv_qkv_rope(const Mat& x, const bf16* w, int64_t k, const bf16* bias, Mat y,
                   const GemvRope& r, const Launch& launch);

// ---------------------------------------------------------- mixture of experts (moe.cu)
//
// Expert ids are I32 [T, top_k] and routing weights F32 [T, top_k] (row strides in elements). The
// (token, slot) pair p = t * top_k + j is the unit of expert work. An expert id outside
// [0, num_experts) (never produced by moe_route) contributes nothing and is not counted.

// Per token: softmax over router logits [T, E] F32 (a NaN logit gets probability 0), the top_k
// largest probabilities (equal probabilities: lower expert id first), weights renormalised to sum
// 1 when `normalize`. Same maths as CpuBackend::moe_route; one thread block per token. E <= 8192.
void moe_route(const float* logits, int64_t logits_stride, int32_t tokens, int32_t num_experts,
               int32_t top_k, bool normalize, int32_t* ids, int64_t ids_stride, float* weights,
               int64_t weights_stride, const Launch& launch);

// The experts of one layer as device arrays of num_experts device pointers (built by the backend
// once per layer): gate[e] and up[e] BF16 [inter, hidden] contiguous, down[e] BF16 [hidden, inter].
struct MoeExpertTable {
  const bf16* const* gate = nullptr;
  const bf16* const* up = nullptr;
  const bf16* const* down = nullptr;
  int32_t num_experts = 0;
  int64_t hidden = 0, inter = 0;
};

// The small-batch expert path (decode, T <= kMoeSmallMaxTokens): per pair a vectorised GEMV over
// its expert's gate and up with the SwiGLU epilogue into act (BF16, rounded like the dense path's
// activations), then the down GEMV into slot_out (F32), then moe_combine into out. Each pair reads
// its expert's three matrices once with 16-byte loads. Needs hidden % 8 == 0, inter % 8 == 0, every
// weight pointer and x 16-byte aligned with x.stride % 8 == 0 (moe_small_supported checks the sizes,
// the backend the pointers). No allocation or synchronisation: capturable.
constexpr int32_t kMoeSmallMaxTokens = 8;
bool moe_small_supported(int64_t hidden, int64_t inter);
// What every expert path takes: the step's token rows, their routing (ids I32 and weights F32
// [T, top_k], row strides in elements), the layer's experts, the output and the counters (see
// MoeCombineArgs).
struct MoeStepArgs {
  Mat x;  // BF16 [T, hidden]
  const int32_t* ids = nullptr;
  int64_t ids_stride = 0;
  const float* weights = nullptr;
  int64_t weights_stride = 0;
  int32_t top_k = 0;
  MoeExpertTable experts;
  Mat out;  // F32 or BF16 [T, hidden]
  unsigned long long* counters = nullptr;
  const int32_t* row_slots = nullptr;
};
// Rows [t0, t0 + n) of a step (x, routing, out and row_slots advanced together).
MoeStepArgs moe_step_rows(const MoeStepArgs& a, int64_t t0, int64_t n);
struct MoeSmallArgs : MoeStepArgs {
  bf16* act = nullptr;       // scratch [T * top_k, inter], contiguous
  float* slot_out = nullptr; // scratch [T * top_k, hidden], contiguous
};
void moe_experts_small(const MoeSmallArgs& a, const Launch& launch);

// The grouped expert path (medium batches, moe_grouped.cu): the T * top_k pairs stably sorted by
// expert on the device (moe_sort_pairs, into counts/offsets/order/position), then a gate/up kernel
// with the SwiGLU epilogue into act (BF16 [pairs, inter] in sorted order, rounded like the other
// paths) and a down kernel into y (F32 [pairs, hidden], sorted order), both over a fixed grid of
// (16-row tile, expert) blocks: a block reads its expert's [offsets[e], offsets[e + 1]) from device
// memory, exits when that is empty, and multiplies the expert's rows in passes of 32 tokens (four
// tensor-core groups of 8) so an expert's weights are streamed once per 32 of its pairs; then
// moe_combine (slot order) through `position` into out. Same size and alignment requirements as the
// small path (moe_small_supported; x, act, y 16-byte aligned, x.stride % 8 == 0), and T * top_k <=
// max_pairs, the capacity of order, position, act and y. No host synchronisation, no allocation,
// a grid that depends only on the shapes: capturable, and a captured graph serves any routing.
struct MoeGroupedArgs : MoeStepArgs {
  int32_t* counts = nullptr;    // scratch [num_experts]
  int32_t* offsets = nullptr;   // scratch [num_experts + 1]
  int32_t* order = nullptr;     // scratch [max_pairs]
  int32_t* position = nullptr;  // scratch [max_pairs]
  bf16* act = nullptr;          // scratch [max_pairs, inter], contiguous
  float* y = nullptr;           // scratch [max_pairs, hidden], contiguous
  int64_t max_pairs = 0;
};
void moe_experts_grouped(const MoeGroupedArgs& a, const Launch& launch);

// Large batches (the backend runs the expert GEMMs itself between these):
// Stable sort of the T * top_k pairs by expert: counts[e], offsets[e] (exclusive prefix sum,
// offsets[E] = pairs with a valid id), order[i] = the pair at sorted position i (pairs of one
// expert in increasing pair order), position[p] = the sorted position of pair p (untouched for an
// invalid id). Integer work only: the result does not depend on scheduling.
void moe_sort_pairs(const int32_t* ids, int64_t ids_stride, int32_t tokens, int32_t top_k,
                    int32_t num_experts, int32_t* counts, int32_t* offsets, int32_t* order,
                    int32_t* position, const Launch& launch);
// xs[i] = x[order[i] / top_k] for i < pairs (x, xs BF16).
void moe_gather_pairs(const Mat& x, const int32_t* order, int32_t pairs, int32_t top_k, Mat xs,
                      const Launch& launch);

// out[t] = sum over j = 0, 1, ..., top_k - 1 (in that order, F32) of weights[t, j] *
// y[row(t * top_k + j)], where row(p) = position ? position[p] : p; out F32 or BF16. When counters
// is not null, one is added (integer atomics) to counters[ids[t, j]] for every valid pair of a
// token whose row_slots entry is >= 0 (row_slots null: every token), so padding rows of a graph
// bucket are not counted.
struct MoeCombineArgs {
  const float* y = nullptr;  // [*, hidden] contiguous
  const int32_t* position = nullptr;
  const int32_t* ids = nullptr;
  int64_t ids_stride = 0;
  const float* weights = nullptr;
  int64_t weights_stride = 0;
  int32_t tokens = 0, top_k = 0, num_experts = 0;
  Mat out;
  unsigned long long* counters = nullptr;  // this layer's [num_experts], or null
  const int32_t* row_slots = nullptr;
};
void moe_combine(const MoeCombineArgs& a, const Launch& launch);
// The combine of a step's expert outputs y: pair p's row of y is position[p] (null: p).
MoeCombineArgs moe_combine_args(const MoeStepArgs& a, const float* y, const int32_t* position);

// out[t, :] += sigmoid(gate[t, 0]) * x[t, :] (Qwen2-MoE shared expert). out, x F32 or BF16 of the
// same shape; gate F32 or BF16 [T, >= 1].
void sigmoid_gate_add(Mat out, const Mat& x, const Mat& gate, const Launch& launch);
}  // namespace inferdesk::cuda
