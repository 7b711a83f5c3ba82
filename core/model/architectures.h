// One loader per architecture family; each lives in its own file (core/model/<arch>.cpp) and
// only says which tensors the family has and what they are called.
#pragma once

#include <memory>

#include "core/model/model.h"

namespace inferdesk {

std::unique_ptr<Model> load_llama(const ModelConfig& c, WeightLoader& w);      // llama, mistral
std::unique_ptr<Model> load_qwen2(const ModelConfig& c, WeightLoader& w);      // qwen2
std::unique_ptr<Model> load_qwen3(const ModelConfig& c, WeightLoader& w);      // qwen3
std::unique_ptr<Model> load_mixtral(const ModelConfig& c, WeightLoader& w);    // mixtral
std::unique_ptr<Model> load_qwen2_moe(const ModelConfig& c, WeightLoader& w);  // qwen2_moe
std::unique_ptr<Model> load_qwen3_moe(const ModelConfig& c, WeightLoader& w);  // qwen3_moe

}  // namespace inferdesk
