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

struct LoadedModel {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<ModelFolder> folder;  // null for dummy weights
  std::unique_ptr<WeightSource> weights;
  std::unique_ptr<Model> model;
  ModelConfig config;
  std::vector<int32_t> eos_token_ids;  // config.json ∪ generation_config.json
  std::string name;                    // folder name or dummy shape name
  int64_t weight_bytes = 0;

  const ModelConfig& cfg() const { return config; }
};

// Open a Hugging Face folder and load it on `backend`.
LoadedModel load_model_folder(const std::filesystem::path& dir, std::unique_ptr<Backend> backend,
                              const LoadProgress& progress = {});

// Random BF16 weights of a built-in shape (resources/shapes/<name>.json) or of a config.json path.
LoadedModel load_dummy_model(const std::string& shape, const std::filesystem::path& shapes_dir,
                             std::unique_ptr<Backend> backend, uint64_t seed = 1, const LoadProgress& progress = {});

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
