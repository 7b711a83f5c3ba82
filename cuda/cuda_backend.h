// The CUDA backend: implements core's Backend interface on one NVIDIA GPU. Plain C++ header (no
// CUDA types), so the CLI, the GUI and tests can create it without CUDA headers.
//
// Weights live on the GPU in BF16 (F16/F32 checkpoints converted at load, through pinned
// staging) or as FP8 codes with their scales (core/backend/quant.h); activations are BF16, the
// residual stream and logits F32; the paged KV cache is BF16 or E4M3
// [layer][K|V][block][kv_head][slot][head_dim]. GEMMs go through cuBLASLt (small batches through
// our own memory-bound GEMV kernels, FP8 decode batches through our wgmma kernels); decode steps are captured as CUDA graphs per batch-size
// bucket and replayed; sampling runs on the GPU. Memory plan: weights, then activations, then the
// KV cache in what is left of gpu_memory_utilization x device memory (Engine does the sizing
// through Backend::kv_cache_budget).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/backend/cuda_options.h"  // CudaBackendOptions

namespace inferdesk {

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
