// Paged attention over the KV cache (attention_prefill.cu, attention_decode*.cu): causal prefill
// chunks and flash-decoding steps, GQA, sliding windows, over a BF16 or an E4M3 cache
// (kv_format.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/kernels/common.h"
#include "cuda/kernels/kv_format.h"
#include "cuda/kernels/launch.h"

namespace inferdesk::cuda {

// Default fewest keys per split of a decode context (PagedAttentionArgs::min_keys_per_split): 64
// beat 16, 32 and 128 at batch 1 (docs/PERF.md).
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
  bf16* out = nullptr;  // [T, num_heads * head_dim], stride out_stride
  int64_t out_stride = 0;
  // This layer's cache (common.h's layout, elements of kv.elem_bytes()) and how it stores values:
  // an E4M3 cache is dequantized in registers (value * kv.k_scale / kv.v_scale).
  const void* k_cache = nullptr;
  const void* v_cache = nullptr;
  KvFormat kv;
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
  // the load Auto uses for grids of many blocks (Pipelined or Mma; Mma is faster at every batch and
  // context measured: docs/PERF.md).
  DecodeLoad large_grid_load = DecodeLoad::Mma;
  // Decode: query heads of one kv group a thread block serves (8, 4, 2 or 1; a group larger than
  // this is cut into chunks, each block reading its kv head's K/V again). Fewer heads per block
  // means more blocks with less work each: for grids of a few blocks (batch 1, 8 query heads per kv
  // head) latency rather than bandwidth. Under Auto, grids of few blocks use
  // small_grid_heads_per_block instead when it is smaller: 2 by default (faster than the whole
  // group at batch 1, in the kernel and in the engine: docs/PERF.md).
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
size_t decode_workspace_bytes(int32_t num_seqs, int32_t num_heads, int32_t head_dim, int32_t num_splits);

}  // namespace inferdesk::cuda
