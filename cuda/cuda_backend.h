// The CUDA backend: implements core's Backend interface on one NVIDIA GPU. Plain C++ header (no
// CUDA types), so the CLI, the GUI and tests can create it without CUDA headers.
//
// Weights live on the GPU in BF16 (F16/F32 checkpoints converted at load, through pinned
// staging); activations are BF16, the residual stream and logits F32; the paged KV cache is BF16
// [layer][K|V][block][kv_head][slot][head_dim]. GEMMs go through cuBLASLt (small batches through
// our own memory-bound GEMV kernels); decode steps are captured as CUDA graphs per batch-size
// bucket and replayed; sampling runs on the GPU. Memory plan: weights, then activations, then the
// KV cache in what is left of gpu_memory_utilization x device memory (Engine does the sizing
// through Backend::kv_cache_budget).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"

namespace inferdesk {

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
  // (H200: 2 GiB, so a Mixtral step of 6,000 tokens is one chunk: each chunk reads every used
  // expert's weights once, and 256 MiB cut an 8,192-token prefill step of Mixtral into 11 chunks).
  int64_t moe_scratch_bytes = 0;
  // Programmatic dependent launch (sm_90+): a kernel's launch and prologue overlap the previous
  // kernel's tail. Process-wide setting, applied when the backend is created.
  bool pdl = true;
  // linear_add_rms_norm of 33-64 rows on the wide k-split GEMM with the residual add in its
  // epilogue and the norm's row scale applied by the next GEMM's epilogue (Hopper; otherwise, or
  // off, a projection and an add_rms_norm). INFERDESK_FUSED_NORM=0 also turns it off.
  bool fused_norm = true;
};

// Throws Error(Unsupported) with the reason when there is no usable GPU.
std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& options = {});

// Whether a CUDA device is usable; *reason says why not.
bool cuda_backend_available(std::string* reason);

// How many moe_experts calls each expert path of a CUDA backend served since it was created
// (host-side counts, for tests and profiling). Throws Error(InvalidArgument) for another backend.
struct CudaMoePathCounts {
  int64_t small = 0, grouped = 0, large = 0;
};
CudaMoePathCounts cuda_moe_path_counts(const Backend& backend);
// How many steps of a CUDA backend took their tokens from the previous sampling on the device
// (StepInput::tokens_from_last_sample; EngineOptions::overlap_steps). Same errors as above.
int64_t cuda_chained_steps(const Backend& backend);
// How many linear_add_rms_norm calls a CUDA backend ran fused (CudaBackendOptions::fused_norm).
int64_t cuda_fused_norms(const Backend& backend);

}  // namespace inferdesk
