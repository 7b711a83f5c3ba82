// What a model is and what it will cost before it is loaded: the facts the model manager shows
// (architecture, parameters, active parameters for MoE, dtype, context, size) and a memory
// estimate (weights + KV cache for a chosen context + activations) used to refuse a load that
// will not fit. Reads only headers (config.json, safetensors headers): no weights are touched.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "core/engine/model_loader.h"
#include "core/model/config.h"
#include "core/util/dtype.h"

namespace inferdesk {

struct ModelInfo {
  std::filesystem::path dir;
  ModelConfig config;
  int64_t params_total = 0;
  int64_t params_active = 0;                   // per token; == total for dense models
  std::map<std::string, int64_t> dtype_bytes;  // weight bytes per stored dtype ("BF16": ...)
  std::string dtype;                           // the dtype holding most bytes
  int64_t weight_bytes = 0;                    // as stored
  int64_t size_on_disk = 0;                    // all regular files in the folder
  int64_t context_length = 0;                  // max_position_embeddings
  bool has_tokenizer = false;                  // tokenizer.json or vocab.json + merges.txt
  int32_t num_shards = 0;
};

// Opens the folder with full validation (same errors as loading).
ModelInfo inspect_model_folder(const std::filesystem::path& dir);

struct MemoryEstimate {
  int64_t weights = 0;
  int64_t kv_cache = 0;
  int64_t activations = 0;
  int64_t total = 0;
  int64_t kv_bytes_per_token = 0;
};

// Weight bytes a backend keeps of `params` parameters stored in `stored_bytes`: the CPU reads them
// as stored; CUDA converts unquantized weights to BF16 and keeps FP8 checkpoints (`fp8_stored`) as
// stored. FP8 on load makes the projections one byte each; the embeddings (and an untied lm_head)
// keep their width: BF16 on CUDA, as stored on the CPU.
int64_t backend_weight_bytes(const ModelConfig& config, int64_t params, int64_t stored_bytes, bool fp8_stored,
                             bool cuda, bool fp8_on_load);
// The same for any quantize-on-load scheme whose projections take `projection_bytes` per parameter
// (codes and scales: fp8 1, int8 per channel 1, int4 in groups of 128 0.5 + 4/128).
int64_t on_load_weight_bytes(const ModelConfig& config, int64_t params, int64_t stored_bytes, double projection_bytes,
                             bool cuda);
// Those bytes per parameter for a quantize-on-load choice (0 for None).
double on_load_projection_bytes(LoadQuantization q);

// Memory to run `config` with `context_tokens` of KV cache in `kv_dtype` (CPU: F32, CUDA: BF16)
// and steps of up to `max_batched_tokens` tokens; weights counted at `weight_bytes` (what the
// backend keeps: the file size on CPU, BF16 on CUDA).
MemoryEstimate estimate_memory(const ModelConfig& config, int64_t weight_bytes, int64_t context_tokens, DType kv_dtype,
                               int64_t max_batched_tokens = 2048);

}  // namespace inferdesk
