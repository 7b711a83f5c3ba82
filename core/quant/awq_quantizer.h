// AWQ calibration of a dense BF16/F16/F32 model folder on the CPU: a calibration text runs through
// our own engine (the CPU backend behind a CaptureBackend, core/quant/capture_backend.h), and layer
// by layer, as AutoAWQ does, the inputs of each projection are recorded with every earlier layer
// already scaled and quantized; per layer four scale searches (awq_math.h) are made and folded
// into the op before them:
//   q/k/v     input_layernorm.weight / s, their columns * s
//   o_proj    v_proj rows / s (and its bias), o_proj columns * s; only when v_proj's outputs are
//             o_proj's inputs one to one (no grouped-query attention), else o_proj is not scaled
//   gate/up   post_attention_layernorm.weight / s, their columns * s
//   down      up_proj rows / s, down_proj columns * s
// then the seven projections are quantized to int4 group 128 with zero points. A scaled norm
// weight is rounded to its dtype and the columns are scaled by what the rounded value implies,
// so the float model is unchanged up to the weights' quantization. No clipping search.
// Cost: one teacher-forced pass over the calibration tokens per layer (each pass runs the whole
// model), plus 4 x n_grid quantize-and-multiply rounds per layer.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/io/int_weights.h"
#include "core/io/model_folder.h"
#include "core/quant/awq_math.h"

namespace inferdesk {

struct AwqOptions {
  int32_t max_tokens = 512;    // calibration tokens used (the text is cut at this many)
  int32_t chunk = 128;         // tokens per forward step
  bool search_scales = true;   // false: plain asymmetric int4 quantization (for comparisons)
  ScaleSearchOptions search;
  // The backend of each calibration pass; empty: the CPU backend.
  std::function<std::unique_ptr<Backend>()> make_backend;
  // (fraction done 0..1); return false to cancel (Error Cancelled).
  std::function<bool(double)> progress;
};

// One scale search: which layer and group, the winning ratio and the output errors.
struct AwqSearchRecord {
  int32_t layer = 0;
  std::string group;  // "qkv", "o", "gate_up", "down"
  double ratio = 0, loss = 0, loss_unscaled = 0;
};

struct AwqResult {
  // Projection module ("model.layers.0.self_attn.q_proj") -> its AWQ weight (canonical layout,
  // F16-exact scales, zero points).
  std::map<std::string, HostIntWeight> linears;
  // Tensors whose values changed (scaled norm weights, a scaled v_proj bias): name -> values,
  // each representable in the tensor's own dtype.
  std::map<std::string, std::vector<float>> replaced;
  std::vector<AwqSearchRecord> searches;
};

// The projections of each layer that AWQ quantizes, and why a folder cannot be (typed errors):
// quantized already, MoE, a projection that is not F32/F16/BF16, whose input features are not a
// multiple of 128 or whose outputs are not a multiple of 8 (InvalidArgument naming the tensor).
std::vector<std::string> awq_modules(const ModelFolder& folder, int64_t layer);
void check_awq_quantizable(const ModelFolder& folder);

// Throws Error: InvalidArgument (fewer than 2 calibration tokens, the checks above), Cancelled,
// whatever loading throws.
AwqResult awq_quantize_model(const std::filesystem::path& dir, const std::vector<int32_t>& calibration_ids,
                             const AwqOptions& options = {});

}  // namespace inferdesk
