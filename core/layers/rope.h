// Rotary position embedding parameters as Hugging Face computes them (default, linear, llama3).
#pragma once

#include "core/backend/backend.h"
#include "core/model/config.h"

namespace inferdesk {

// inv_freq for head_dim-wide rotary embeddings with the config's rope_theta and rope_scaling,
// computed in float32 exactly as transformers' ROPE_INIT_FUNCTIONS do.
RopeConfig make_rope_config(const ModelConfig& config);

}  // namespace inferdesk
