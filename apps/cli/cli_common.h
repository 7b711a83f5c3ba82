// Helpers shared by the inferdesk-cli subcommands: backend selection, model loading with
// progress on stderr, parsing of id lists, JSON formatting of results.
#pragma once

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/backend/cuda_options.h"
#include "core/engine/engine.h"
#include "core/engine/generate.h"

namespace inferdesk::cli {

struct BackendChoice {
  std::string name = "cpu";               // cpu | cuda
  int threads = 0;                        // CPU threads; 0 = all cores
  double gpu_memory_utilization = 0.90;   // CUDA: fraction of the GPU for weights + activations + KV
  bool cuda_graphs = true;                // CUDA: capture decode steps as graphs
  bool pdl = true;                        // CUDA: programmatic dependent launch
  bool overlap_steps = true;              // EngineOptions::overlap_steps (CUDA: chained decode steps)
  int block_size = 16;                    // EngineOptions::block_size (tokens per KV-cache block)
  std::vector<std::string> cuda_options;  // --cuda-option key=value (cuda_option_table.h)
  std::string quantization = "none";      // --quantization: none | fp8 | int8 | int4 (quantize on load);
                                          // awq | gptq | w8a16 | w8a8 (dummy weights)
  bool quantize_lm_head = false;          // dummy integer weights: lm_head quantized too (bench)
  std::string kv_cache_dtype = "auto";    // --kv-cache-dtype: auto | fp8
};

// Adds --backend, --threads, --gpu-memory-utilization, --no-cuda-graphs, --no-pdl,
// --[no-]overlap-steps, --block-size, --quantization, --kv-cache-dtype and --cuda-option to a
// subcommand.
void add_backend_options(CLI::App* cmd, BackendChoice& choice);
// EngineOptions from the backend choice and a KV budget in MiB (0 = automatic).
EngineOptions engine_options(const BackendChoice& choice, int64_t kv_cache_mb);

std::unique_ptr<Backend> make_backend(const BackendChoice& choice);
// The CUDA backend's options the choice asks for; Error(InvalidArgument) for a bad --cuda-option.
CudaBackendOptions cuda_backend_options(const BackendChoice& choice);

// Load a model folder or a dummy shape, printing progress to stderr when `progress` is set.
LoadedModel load_for_cli(const std::string& model_dir, const std::string& dummy_shape, const BackendChoice& backend,
                         bool progress);

// "1,2,3" → {1,2,3}; throws InvalidArgument naming `what` on anything else (an empty list, an
// empty entry, spaces, signs, fractions, ids above INT32_MAX).
std::vector<int32_t> parse_id_list(const std::string& text, const std::string& what);

// A decimal integer >= 0 up to 2^64 - 1 (a seed): "-1", "+1", "1.5", "" are InvalidArgument
// naming `what` (CLI11 would read "-1" as 2^64 - 1).
uint64_t parse_non_negative(const std::string& text, const std::string& what);

// A file the user named for `what` (e.g. "--input"), opened for reading: NotFound when absent,
// InvalidArgument for a directory or a FIFO (which would read as empty or block).
std::ifstream open_input_file(const std::string& path, const std::string& what);

const char* finish_reason_name(FinishReason r);

// {"tokens":[...], "logprobs":[[{"id":..,"logprob":..},..],..] | null, "finish_reason":..,
//  "timing":{...}} (plus "error" when the request failed).
nlohmann::json result_to_json(const GenerationResult& r, int32_t num_logprobs);

}  // namespace inferdesk::cli
