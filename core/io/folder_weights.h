// The weights of a model folder as a WeightSource (core/model/weights.h): tensors of the folder's
// mmapped safetensors handed to the backend as they are (F32, F16 or BF16).
#pragma once

#include <memory>

#include "core/io/model_folder.h"
#include "core/model/weights.h"

namespace inferdesk {

// The folder must outlive every model loaded from it.
std::unique_ptr<WeightSource> make_folder_weights(const ModelFolder& folder);

}  // namespace inferdesk
