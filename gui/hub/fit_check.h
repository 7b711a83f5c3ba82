// The wizard's fit check: for each variant of a repository and a few context lengths, whether the
// model fits on this machine's GPU, in RAM only, or not at all, before anything is downloaded. The
// numbers come from core/engine's estimate_memory with the rule ModelManager::checkMemory applies
// to a folder on disk (CPU: the weights as stored and a float32 KV cache; CUDA: BF16 weights and a
// BF16 cache), with FP8 projections counted at one byte (an FP8 checkpoint, or FP8 on load).
#pragma once

#include <QString>

#include <vector>

#include "core/engine/model_info.h"
#include "gui/hub/repo_overview.h"

namespace inferdesk::gui {

// What this machine offers a model now (tests pass their own).
struct MachineMemory {
  bool gpu_usable = false;
  QString gpu_name;    // "NVIDIA H200 (139.8 GiB, sm_90)"
  QString gpu_reason;  // why there is no usable GPU
  qint64 gpu_free = 0;
  qint64 ram_available = 0;  // MemAvailable (0: unknown)
  // The backends info the app has: cuda_status() and ModelManager::availableMemory("cpu").
  static MachineMemory probe();
};

enum class Fit { Gpu, RamOnly, None, Unknown };
QString fit_text(Fit f);  // "fits on your GPU", "fits in RAM only", "does not fit", "cannot tell"

struct FitCell {
  Fit fit = Fit::Unknown;
  qint64 context = 0;
  qint64 gpu_bytes = 0;  // needed on CUDA (0 when not estimated)
  qint64 ram_bytes = 0;  // needed on the CPU backend
  QString detail;        // the numbers, for a tooltip
};

struct FitRow {
  RepoVariant variant;
  std::vector<FitCell> cells;  // one per context of fit_contexts()
};

// 4 K, 32 K and 128 K tokens where the model's context allows them, and the model's own context.
std::vector<qint64> fit_contexts(qint64 max_context);

// Weight bytes a backend keeps for `v` of a model with `params` parameters.
qint64 variant_weight_bytes(const ModelConfig& config, qint64 params, const RepoVariant& v, bool cuda);

FitCell check_fit(const ModelConfig& config, qint64 params, const RepoVariant& v, qint64 context,
                  const MachineMemory& machine);
// Every variant × fit_contexts(); empty when the overview has no parsed config.
std::vector<FitRow> fit_table(const RepoOverview& o, const MachineMemory& machine);

// The engine's view of a not-yet-downloaded variant (what ModelManager::checkMemory takes).
ModelInfo hub_model_info(const ModelConfig& config, qint64 params, qint64 file_bytes);

}  // namespace inferdesk::gui
