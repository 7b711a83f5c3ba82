// Test harness of the paged-attention kernels: a case (sequences, heads, block size, window,
// strides, cache format) becomes random bf16-exact inputs in a randomly laid out paged cache, the
// CPU backend's attention over the same values (the reference), and device copies with poisoned
// outputs. An E4M3 case's cache is quantized on the host exactly as the CPU backend rounds it
// (core/util/fp8.h), so the kernels and the reference read the same values.
#pragma once

#include <cuda_bf16.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "cuda/kernels/attention.h"
#include "cuda/kernels/common.h"
#include "cuda/kernels/kv_format.h"
#include "tests/gpu/gpu_test.h"

namespace inferdesk::gputest::attn {

using bf16 = __nv_bfloat16;

struct SeqSpec {
  int32_t query_len = 1;
  int32_t context_len = 1;  // 0: padding sequence (its query rows must come out as zeros)
};

struct AttnCase {
  std::vector<SeqSpec> seqs;
  int32_t num_heads = 8;
  int32_t num_kv_heads = 2;
  int32_t head_dim = 64;
  int32_t block_size = 16;
  int32_t sliding_window = 0;
  uint64_t seed = 1;
  float q_range = 4.0f;      // q uniform in [-q_range, q_range] (peaky softmax), k and v in [-1, 1]
  int32_t q_pad = 0;         // q row stride = num_heads * head_dim + q_pad
  int32_t out_pad = 0;       // same for out (the gap must stay poisoned)
  int32_t q_offset = 0;      // q rows start this many elements into the q buffer
  int32_t cache_offset = 0;  // the caches start this many elements into their buffers
  cuda::KvFormat kv;         // BF16, or E4M3 with these K/V scales
  int32_t row_gap = 0;       // unused rows between consecutive sequences' rows (stay poisoned)
  int32_t min_blocks = 0;    // cache at least this many blocks (spare ones are NaN)
  std::string describe() const;
};

// A case of `seqs` over num_heads / num_kv_heads heads of head_dim, other fields at their defaults.
AttnCase make_case(std::vector<SeqSpec> seqs, int32_t num_heads, int32_t num_kv_heads, int32_t head_dim,
                   int32_t block_size = 16, uint64_t seed = 1);

// Inputs, layout and the CPU reference of a case.
struct AttnData {
  AttnCase c;
  int32_t rows = 0;        // rows of q/out (incl. gaps)
  int32_t num_blocks = 0;  // blocks in the cache
  int64_t q_stride = 0, out_stride = 0;
  std::vector<int32_t> query_start, query_len, context_len, block_table_start, block_tables;
  std::vector<float> q;        // [rows, q_stride] bf16-exact (gaps 0)
  std::vector<float> k_cache;  // [num_blocks][Hk][bs][D]; slots no sequence owns are NaN
  std::vector<float> v_cache;
  std::vector<float> want;  // [rows, H*D]: CPU attention; zeros for padding rows
  int32_t max_query_len = 0;
};

// The layout only (rows, strides, per-sequence arrays, block tables; no values): block ids
// shuffled over the pool, every sequence's table followed by an out-of-range id (so a kernel that
// reads past the entries it needs faults).
AttnData make_layout(const AttnCase& c);
// The layout plus random values and the CPU reference.
AttnData make_data(const AttnCase& c);

// A K (or, with is_v, a V) cache as the kernels store it: BF16, or E4M3 with kv's K (V) scale, as
// the CPU backend rounds it (NaN stays NaN), after `offset` poisoned (NaN) elements.
std::vector<uint8_t> encode_cache(const std::vector<float>& v, int32_t offset, const cuda::KvFormat& kv, bool is_v);
// An E4M3 case with scales k_scale, v_scale (other fields as `c`).
AttnCase with_fp8(AttnCase c, float k_scale, float v_scale);

// Device copies of a case and the launch arguments pointing at them (args.k_cache / v_cache: the
// caches past cache_offset).
struct DeviceAttn {
  DeviceBuffer<bf16> q, out;
  DeviceBuffer<uint8_t> k_cache, v_cache;  // bytes in the case's format
  DeviceBuffer<int32_t> query_start, query_len, context_len, block_table_start, block_tables;
  DeviceBuffer<char> workspace;
  DeviceBuffer<int32_t> split_counters;  // zeroed by set_splits; the decode kernel leaves them zero
  cuda::PagedAttentionArgs args;
};
// Allocates (block table capacity at least `table_capacity` entries) and uploads `d`.
void make_device(const AttnData& d, DeviceAttn& dev, size_t table_capacity = 0);
// Uploads `d` into buffers made for a case of the same rows, heads and cache size (the addresses,
// hence a captured graph, stay valid) and poisons out and the workspace again.
void refill_device(const AttnData& d, DeviceAttn& dev);
// Allocates a poisoned workspace and zeroed split counters for num_splits and sets
// args.num_splits / workspace / split_counters.
void set_splits(DeviceAttn& dev, int32_t num_splits);
// Whether every split counter is zero again (as the decode kernel must leave them).
::testing::AssertionResult counters_are_zero(const DeviceAttn& dev);

// This step's own K/V rows, for chains in which the kernel before attention (qk_norm_rope_write_kv)
// writes them into the cache: row r of k/v is query row r's token (zeros for rows of padding
// sequences and gaps, whose slot is -1), and the caches with exactly those slots poisoned (NaN),
// so an attention kernel that reads the cache before that write completed produces NaN.
struct PendingKv {
  std::vector<float> k, v;                // [rows, num_kv_heads * head_dim]
  std::vector<int32_t> positions, slots;  // [rows]
  std::vector<float> k_cache, v_cache;    // the case's caches, pending slots NaN
};
PendingKv make_pending(const AttnData& d);
// Uploads caches laid out as d's (cache_offset honoured) into dev.
void upload_caches(const AttnData& d, const std::vector<float>& k, const std::vector<float>& v, DeviceAttn& dev);

// Compares the device output with the reference: per sequence normalised error < tol, padding
// rows exactly zero, gap rows and the columns past num_heads * head_dim untouched (poison).
::testing::AssertionResult output_matches(const AttnData& d, const DeviceAttn& dev, double tol);

// How a decode launch loads K/V, for traces and benchmark output: "auto", "registers",
// "pipelined" (the shared-memory pipeline) or "mma" (the tensor-core kernel).
inline const char* load_name(cuda::DecodeLoad load) {
  switch (load) {
    case cuda::DecodeLoad::Registers: return "registers";
    case cuda::DecodeLoad::Pipelined: return "pipelined";
    case cuda::DecodeLoad::Mma: return "mma";
    default: return "auto";
  }
}

// A gtest parameter name like "D128_G4_S16" from (prefix, value) pairs.
std::string param_name(std::initializer_list<std::pair<const char*, int>> parts);

enum class Kernel { Prefill, Decode };
// Builds the case, runs one kernel on the default stream (decode with num_splits) and checks the
// output with output_matches (gtest failures, traced with the case).
// min_keys_per_split: PagedAttentionArgs' (decode: fewest keys a split of a context gets).
void run_and_check(const AttnCase& c, Kernel kernel, int32_t num_splits = 1,
                   int32_t min_keys_per_split = cuda::kDecodeMinKeysPerSplit);

// bf16 output rounding (2^-9 relative) plus, in the prefill kernel, P rounded to bf16 before the
// P.V product: normalised errors of 2e-3..5e-3; a wrong key, row or head gives errors of 0.1..1.
constexpr double kTol = 1e-2;

}  // namespace inferdesk::gputest::attn
