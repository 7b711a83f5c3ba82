#include "core/model/model_validation.h"

#include <algorithm>
#include <cstring>

#include "core/model/architectures.h"
#include "core/util/dtype.h"
#include "core/util/error.h"

namespace inferdesk {

namespace {

// Whether any of n elements of `data` has all of `exp_mask`'s bits set (IEEE exponent all ones:
// infinity or NaN; for E4M3 the NaN code). A chunked OR keeps the inner loop branch-free so it
// vectorises; the first bad chunk is then searched element by element.
template <typename U>
int64_t first_all_ones(const std::byte* data, int64_t n, U exp_mask) {
  constexpr int64_t kChunk = 4096;
  for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
    const int64_t c1 = std::min(n, c0 + kChunk);
    U any = 0;
    for (int64_t i = c0; i < c1; ++i) {
      U v;
      std::memcpy(&v, data + i * static_cast<int64_t>(sizeof(U)), sizeof(U));  // the mapping may be unaligned
      any |= static_cast<U>((v & exp_mask) == exp_mask);
    }
    if (!any) continue;
    for (int64_t i = c0; i < c1; ++i) {
      U v;
      std::memcpy(&v, data + i * static_cast<int64_t>(sizeof(U)), sizeof(U));
      if ((v & exp_mask) == exp_mask) return i;
    }
  }
  return -1;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void check_token_id(const char* field, const std::string& file, int64_t id, int64_t vocab_size) {
  if (id >= 0 && id < vocab_size) return;
  throw Error(ErrorCode::Format, file + ": field \"" + field + "\": token id " + std::to_string(id) +
                                     " is outside the vocabulary (vocab_size " + std::to_string(vocab_size) +
                                     ": ids 0.." + std::to_string(vocab_size - 1) + ")");
}

}  // namespace

void validate_model_tensors(const ModelConfig& config, WeightSource& weights) {
  const Architecture* arch = find_architecture(config.model_type);
  if (!arch)
    throw Error(ErrorCode::Unsupported, "model_type '" + config.model_type +
                                            "' is not supported (supported: " + supported_model_types_list() + ")");
  WeightLoader dry_run(weights);
  // The family's own loader asks for exactly the tensors a real load reads; the model it builds
  // over empty buffers is dropped.
  (void)arch->load(config, dry_run);
}

void validate_generation_config(const GenerationConfig& g, int64_t vocab_size, const std::string& file) {
  for (int64_t id : g.eos_token_ids) check_token_id("eos_token_id", file, id, vocab_size);
  if (g.bos_token_id >= 0) check_token_id("bos_token_id", file, g.bos_token_id, vocab_size);
}

void check_plain_weight_dtype(const HostTensor& t, const std::string& name, bool quantized) {
  if (t.dtype == DType::F8E4M3 || t.dtype == DType::F8E5M2)
    throw Error(ErrorCode::Format,
                "tensor '" + name + "' is " + dtype_name(t.dtype) +
                    (quantized ? " but is not a linear weight the quantization_config covers"
                               : " but config.json has no quantization_config saying how to read it"));
  if (t.dtype != DType::F32 && t.dtype != DType::F16 && t.dtype != DType::BF16)
    throw Error(ErrorCode::Unsupported,
                "tensor '" + name + "' has dtype " + dtype_name(t.dtype) + "; weights must be F32, F16 or BF16");
}

void check_finite(const HostTensor& t, const std::string& name) {
  const int64_t n = t.numel();
  int64_t bad = -1;
  switch (t.dtype) {
    case DType::F32: bad = first_all_ones<uint32_t>(t.data, n, 0x7F800000u); break;
    case DType::F16: bad = first_all_ones<uint16_t>(t.data, n, 0x7C00); break;
    case DType::BF16: bad = first_all_ones<uint16_t>(t.data, n, 0x7F80); break;
    case DType::F8E4M3: bad = first_all_ones<uint8_t>(t.data, n, 0x7F); break;
    default: return;
  }
  if (bad < 0) return;
  const int64_t cols = t.shape.size() >= 2 ? t.shape.back() : n;
  const std::string where = t.shape.size() >= 2
                                ? " (row " + std::to_string(bad / cols) + ", column " + std::to_string(bad % cols) + ")"
                                : "";
  throw Error(ErrorCode::Format, "tensor '" + name + "' " + shape_text(t.shape) +
                                     " holds a NaN or infinite value at element " + std::to_string(bad) + where +
                                     "; the checkpoint is damaged (re-download or re-export it)");
}

}  // namespace inferdesk
