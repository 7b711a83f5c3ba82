// Rotary position embedding parameters as Hugging Face computes them (default, linear, llama3).
#pragma once

#include <cstdint>

#include "core/backend/backend.h"
#include "core/layers/rope_scaling.h"

namespace inferdesk {

// inv_freq for head_dim-wide rotary embeddings with base rope_theta and `scaling`, computed in
// float32 exactly as transformers' ROPE_INIT_FUNCTIONS do. Throws Error(Unsupported) for a
// scaling type other than linear and llama3.
RopeConfig make_rope_config(int64_t head_dim, double rope_theta, const RopeScaling& scaling);

}  // namespace inferdesk
