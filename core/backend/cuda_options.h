// Options of the CUDA backend, as the programs that create it pass them. Part of core so the CLI
// and the GUI can fill them without linking the CUDA module (cuda/), which implements them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace inferdesk {

// Choices among the CUDA backend's kernels and streams. The defaults are the measured winners
// (docs/PERF.md#why-the-defaults); each switch stays because the question beside it is open.
struct CudaTuning {
  // Decode attention: a grid of fewer (sequence, kv head) blocks than SMs is split along the keys
  // into about `decode_waves` waves, each split at least `decode_min_keys` keys
  // (docs/PERF.md#decode-attention-splits).
  int32_t decode_waves = 4;
  int32_t decode_min_keys = 64;
  // Query heads per attention block for grids of few blocks, and the cap for all grids
  // (docs/PERF.md#decode-heads-per-block).
  int32_t decode_heads_per_block = 2;
  int32_t decode_max_heads = 8;
  // Grids of many blocks on the tensor-core kernel (false: the CUDA-core pipeline). Open: measured
  // on sm_90 only; other architectures may prefer the pipeline (docs/PERF.md#decode-mma).
  bool decode_mma = true;
  // Hopper decode-batch GEMMs on our wide kernels instead of cuBLASLt: the SwiGLU gate/up
  // projection with SiLU * up in its epilogue, and the plain projections with K split over a
  // 2-block cluster. Open: the winner moves with the cuBLASLt release and the batch size
  // (docs/PERF.md#wide-gemm-swiglu, #wide-gemm-ksplit, #wide-gemm-min-rows).
  bool wide_swiglu = true;
  bool wide_ksplit = true;
  int32_t wide_min_rows = 33;  // fewest rows the wide kernels serve
  // The sampling's uploads and downloads on their own stream (false: on the compute stream).
  // Open: its gain is small and depends on how the engine overlaps steps
  // (docs/PERF.md#sampling-copy-stream).
  bool sampling_copy_stream = true;
  // Diagnostics: per-step forward / sampling / idle times printed when the backend is destroyed,
  // and each autotuned cuBLASLt shape printed with its chosen algorithm.
  bool step_timing = false;
  bool gemm_log = false;
};

struct CudaBackendOptions {
  int device = 0;
  bool cuda_graphs = true;  // capture decode steps as CUDA graphs
  // Decode batch sizes graphs are captured for (a step is padded to the next one); larger decode
  // steps run eagerly. Empty: 1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256.
  std::vector<int> graph_batch_sizes;
  // Our GEMV kernels for <= 8 rows instead of cuBLASLt; for MoE layers, the small-batch expert
  // kernels for <= 8 rows and the grouped expert kernels above (off: every MoE step takes the
  // large-batch path and none is captured).
  bool small_batch_gemv = true;
  // The grouped MoE path (sync-free, so such decode steps are captured as graphs) serves a step of
  // T rows of a layer with E experts and top-k routing when T * k <= min(moe_grouped_max_pairs,
  // moe_grouped_pairs_per_expert * E); larger steps take the large-batch path (cuBLASLt GEMMs
  // per expert after one host sync per chunk). The grouped kernels stream an expert's weights
  // once per 32 of its pairs, the GEMMs once per chunk: the per-expert bound keeps the average
  // count per used expert well below 32 (Mixtral, 8 experts: 128 pairs, 64 rows at top-2), the pair
  // bound caps the path's fixed scratch (Qwen3-30B-A3B, 128 experts at top-8: 1024 pairs, 128
  // rows, ~10 MB). 0 in either: no grouped path.
  int32_t moe_grouped_max_pairs = 1024;
  int32_t moe_grouped_pairs_per_expert = 16;
  // Upper bound of the MoE scratch: the grouped path's fixed scratch (sized for its pair bound)
  // and, in what remains, the large-batch path's, which runs a step with more tokens than fit in
  // several chunks of tokens (at least one token per chunk, whatever this says). Reserved in the
  // KV-cache budget of a MoE model. 0: a 64th of the device's memory, within 256 MiB .. 2 GiB
  // (so a Mixtral prefill step of 6,000 tokens is one chunk on a 141 GB GPU: each chunk reads every
  // used expert's weights once, and 256 MiB cut an 8,192-token prefill step into 11 chunks).
  int64_t moe_scratch_bytes = 0;
  // Programmatic dependent launch (sm_90+): a kernel's launch and prologue overlap the previous
  // kernel's tail. Per backend: its kernels launch with it (cuda/kernels/launch.h).
  bool pdl = true;
  // linear_add_rms_norm of 33-64 rows on the wide k-split GEMM with the residual add in its
  // epilogue and the norm's row scale applied by the next GEMM's epilogue (Hopper, with
  // tuning.wide_ksplit; otherwise, or off, a projection and an add_rms_norm).
  bool fused_norm = true;
  CudaTuning tuning;
};

// One GPU as the CUDA runtime describes it.
struct GpuDeviceInfo {
  int index = 0;
  std::string name;
  int64_t total_memory = 0;
  int64_t free_memory = 0;
  int compute_major = 0;
  int compute_minor = 0;
};

}  // namespace inferdesk
