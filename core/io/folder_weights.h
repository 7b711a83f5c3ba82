// The weights of a model folder as a WeightSource (core/model/weights.h): tensors of the folder's
// mmapped safetensors handed to the backend as they are (F32, F16 or BF16), FP8 linear weights
// with their scales as the folder's quantization_config says (core/io/fp8_weights.h), integer
// (AWQ, GPTQ, compressed-tensors) weights converted to the canonical layout (core/io/int_weights.h),
// or BF16 projections quantized to FP8 or integers as they load.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/io/model_folder.h"
#include "core/model/weights.h"

namespace inferdesk {

// Round-to-nearest integer quantization of the projections as they load (int_weights.h).
enum class IntOnLoad : uint8_t { None, Int8Channel, Int4Group128 };

struct FolderWeightsOptions {
  // Quantize the projections (is_projection_module, quant_config.h) of an unquantized folder to E4M3 per output
  // channel, with dynamic per-token activations, as they load. Refused for a quantized folder.
  bool quantize_fp8 = false;
  // Or to integers, weight-only: int8 per output channel or int4 in groups of 128 input columns.
  IntOnLoad quantize_int = IntOnLoad::None;
};

// The folder must outlive every model loaded from it (and the source, which may own quantized
// copies the CPU backend reads in place).
std::unique_ptr<WeightSource> make_folder_weights(const ModelFolder& folder, const FolderWeightsOptions& options = {});

// Per-layer K/V scales of an FP8 KV cache from `<prefix>.self_attn.k_scale` / `.v_scale` (empty
// when the folder has none). Validated: finite and positive.
struct KvScales {
  std::vector<float> k, v;
};
KvScales read_kv_scales(const ModelFolder& folder, int64_t num_layers);

}  // namespace inferdesk
