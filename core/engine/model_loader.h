// Everything a loaded model needs to stay alive: the backend, the mmapped folder (the CPU backend
// reads weights in place) and the model itself.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/io/model_folder.h"
#include "core/model/model.h"

namespace inferdesk {

// How to load: the quantization the user asked for (none: the folder's own, BF16 or as published).
enum class LoadQuantization : uint8_t { None, Fp8, Int8, Int4, Awq, Gptq, W8A16, W8A8 };
struct LoadOptions {
  // Fp8: a BF16/F16/F32 folder's projections are quantized to E4M3 per channel as they load (see
  // FolderWeightsOptions); for dummy weights, the projections are random FP8.
  // Int8 / Int4: round-to-nearest, weight-only, int8 per channel or int4 in groups of 128; for
  // dummy weights, random codes of that scheme.
  // Awq / Gptq / W8A16 / W8A8: dummy weights only, random codes of the scheme such a checkpoint
  // holds (dummy_int_scheme); a folder of that format is loaded as published.
  LoadQuantization quantization = LoadQuantization::None;
  // Dummy integer weights: quantize lm_head too (published AWQ/GPTQ checkpoints keep it BF16).
  bool quantize_lm_head = false;
};

struct LoadedModel {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<ModelFolder> folder;  // null for dummy weights
  std::unique_ptr<WeightSource> weights;
  std::unique_ptr<Model> model;
  ModelConfig config;
  std::vector<int32_t> eos_token_ids;  // config.json ∪ generation_config.json
  std::string name;                    // folder name or dummy shape name
  int64_t weight_bytes = 0;
  std::string quantization = "none";  // the weights' scheme (QuantConfig::describe and the like)
  // Calibrated per-layer K/V scales of an FP8 KV cache from the checkpoint (empty: 1.0).
  std::vector<float> kv_k_scales, kv_v_scales;

  const ModelConfig& cfg() const { return config; }
};

// What every way into a folder checks before trusting it (core/model/model_validation.h): each
// tensor the architecture reads against the config, as `weights` would load it, and
// generation_config.json's token ids. `info`, `generate` and the GUI all go through it.
void validate_model_folder(const ModelFolder& folder, WeightSource& weights);

// Open a Hugging Face folder, validate it (validate_model_folder) and load it on `backend`.
LoadedModel load_model_folder(const std::filesystem::path& dir, std::unique_ptr<Backend> backend,
                              const LoadProgress& progress = {}, const LoadOptions& options = {});

// Random BF16 weights of a built-in shape (resources/shapes/<name>.json) or of a config.json path.
LoadedModel load_dummy_model(const std::string& shape, const std::filesystem::path& shapes_dir,
                             std::unique_ptr<Backend> backend, uint64_t seed = 1, const LoadProgress& progress = {},
                             const LoadOptions& options = {});

// The integer scheme dummy weights take for `q` (QuantScheme::None for none and fp8), and its
// name for `info` and bench output.
QuantInfo dummy_int_scheme(LoadQuantization q);
// "none", "fp8", "int8", "int4", "awq", "gptq", "w8a16", "w8a8" (InvalidArgument otherwise).
LoadQuantization parse_load_quantization(const std::string& name);
std::string dummy_scheme_name(LoadQuantization q, bool quantize_lm_head);

// Parameter counts (total, and active per token for MoE) and BF16 weight bytes of a config.
struct ParamCount {
  int64_t total = 0;
  int64_t active = 0;
};
ParamCount count_parameters(const ModelConfig& c);

// Where the built-in shapes are for a program at exe_path: resources_dir(exe_path)/shapes
// (core/util/install_layout.h). Throws Error(NotFound) when they are not installed.
std::filesystem::path default_shapes_dir(const std::filesystem::path& exe_path);

}  // namespace inferdesk
