// Whether a model's config and tensors make a model InferDesk can run, decided in one place that
// `info`, `generate` and the GUI's model manager all reach (through core/engine's
// validate_model_folder), so that what one accepts the others load. Reads names, shapes and
// dtypes only: no weight bytes are touched.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/config.h"
#include "core/model/weights.h"
#include "core/util/host_tensor.h"

namespace inferdesk {

// Every tensor the architecture of `config` reads exists in `weights` with the shape and a dtype
// its loader takes: the family's own loader runs with a WeightLoader that checks each tensor
// (WeightSource::check) instead of loading it. Throws the error loading would (NotFound, Format,
// Unsupported) naming the first tensor that is missing or wrong.
void validate_model_tensors(const ModelConfig& config, WeightSource& weights);

// generation_config.json's special token ids against the vocabulary (config.json's own are
// checked as it parses). Throws Error(Format) naming the field and `file`.
void validate_generation_config(const GenerationConfig& generation, int64_t vocab_size, const std::string& file);

// A weight the backend takes as it is stored: F32, F16 or BF16. FP8 without a quantization_config
// covering it is Format; any other dtype Unsupported. `quantized`: the folder has a config.
void check_plain_weight_dtype(const HostTensor& t, const std::string& name, bool quantized);

// Throws Error(Format) naming `name` and the element when `t` (F32, F16, BF16 or F8E4M3) holds a
// NaN or an infinity; other dtypes pass. A branch-free scan the compiler vectorises: about the
// cost of reading the bytes once (docs/PERF.md#load-checks).
void check_finite(const HostTensor& t, const std::string& name);

}  // namespace inferdesk
