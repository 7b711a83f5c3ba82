// Mixture-of-experts layers on the GPU: each layer's expert pointer table, the three expert paths,
// their scratch, and the per-layer expert counters. See moe_runner.cpp for the paths.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "core/backend/backend.h"
#include "core/backend/cuda_options.h"
#include "cuda/backend/context.h"
#include "cuda/backend/gemm.h"
#include "cuda/cuda_backend.h"
#include "cuda/kernels/moe.h"

namespace inferdesk::cuda {

// One MoE layer's experts as the kernels see them: device arrays of the experts' gate, up and down
// pointers, built on first use (outside any capture) and rebuilt only when the views change.
struct MoeLayerTable {
  std::vector<const void*> host;  // gate[E], up[E], down[E] as last uploaded
  DeviceBuffer dev;               // the same on the device
  int64_t hidden = 0, inter = 0;
  bool stacked = false;   // every expert's up directly follows its gate: one GEMM for both
  bool small_ok = false;  // sizes and alignment allow the small-batch kernels
};

class MoeRunner {
 public:
  MoeRunner(CudaContext& ctx, Gemm& gemm, const CudaBackendOptions& options);

  // out = the experts' weighted sum for each row of x (settled). row_slots: the step's KV slots
  // while x holds the step's rows (padding rows, slot -1, are not counted), else null.
  void experts(int32_t layer, const Tensor& x, const std::vector<ExpertWeights>& experts, const Tensor& ids,
               const Tensor& weights, Tensor out, const int32_t* row_slots);
  void init_counters(int32_t num_layers, int32_t num_experts);
  std::vector<int64_t> counts();

  // The most rows of a decode step that can be captured: the small and grouped paths serve them in
  // every MoE layer (the large path synchronises with the host). Unbounded for a dense model.
  int32_t max_capturable_rows() const;
  // Scratch the grouped and large paths may still allocate (reserved in the KV-cache budget).
  int64_t reserved_bytes() const;
  CudaMoePathCounts path_counts() const { return path_counts_; }

 private:
  int32_t small_max_rows() const;
  int64_t grouped_pairs(int32_t num_experts) const;
  const MoeLayerTable& table(int32_t layer, const std::vector<ExpertWeights>& experts);
  void run_small(const MoeLayerTable& table, const MoeStepArgs& step);
  void run_grouped(const MoeLayerTable& table, int64_t max_pairs, const MoeStepArgs& step);
  void run_large(const MoeLayerTable& table, const MoeStepArgs& step);

  CudaContext& ctx_;
  Gemm& gemm_;
  const bool small_batch_;
  const int32_t grouped_max_pairs_, grouped_pairs_per_expert_;
  int64_t scratch_bytes_;  // CudaBackendOptions::moe_scratch_bytes, resolved
  std::map<int32_t, MoeLayerTable> tables_;
  DeviceBuffer counters_;  // unsigned long long [counter_layers_ * counter_experts_]
  int32_t counter_layers_ = 0, counter_experts_ = 0;
  bool moe_model_ = false;        // more than one expert: steps the large path serves are not captured
  bool small_ok_ = true;          // cleared when some layer cannot use the small and grouped kernels
  DeviceBuffer small_scratch_;    // graph-stable
  DeviceBuffer grouped_scratch_;  // sized for the pair bound, graph-stable
  DeviceBuffer large_scratch_;    // one chunk; moves only between steps
  int32_t grouped_rows_ = -1;     // min over the layers seen of (pair bound / top_k); -1: none
  PinnedBuffer offsets_host_;
  CudaMoePathCounts path_counts_;
};

}  // namespace inferdesk::cuda
