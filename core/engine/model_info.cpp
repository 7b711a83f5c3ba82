#include "core/engine/model_info.h"

#include <algorithm>

#include "core/engine/model_loader.h"
#include "core/io/folder_weights.h"
#include "core/io/model_folder.h"

namespace inferdesk {

ModelInfo inspect_model_folder(const std::filesystem::path& dir) {
  const ModelFolder folder = ModelFolder::open(dir);
  validate_model_folder(folder, *make_folder_weights(folder));
  ModelInfo info;
  info.dir = dir;
  info.config = folder.config();
  const ParamCount p = count_parameters(info.config);
  info.params_total = p.total;
  info.params_active = p.active;
  for (const auto& shard : folder.shards())
    for (const HostTensor& t : shard.tensors()) info.dtype_bytes[dtype_name(t.dtype)] += static_cast<int64_t>(t.nbytes);
  int64_t best = -1;
  for (const auto& [name, bytes] : info.dtype_bytes)
    if (bytes > best) {
      best = bytes;
      info.dtype = name;
    }
  info.weight_bytes = folder.weight_bytes();
  info.num_shards = static_cast<int32_t>(folder.shards().size());
  info.context_length = info.config.max_position_embeddings;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.is_regular_file(ec)) info.size_on_disk += static_cast<int64_t>(e.file_size(ec));
  info.has_tokenizer = std::filesystem::exists(dir / "tokenizer.json") ||
                       (std::filesystem::exists(dir / "vocab.json") && std::filesystem::exists(dir / "merges.txt"));
  return info;
}

int64_t backend_weight_bytes(const ModelConfig& c, int64_t params, int64_t stored_bytes, bool fp8_stored, bool cuda,
                             bool fp8_on_load) {
  if (!fp8_on_load) return fp8_stored || !cuda ? stored_bytes : params * 2;
  return on_load_weight_bytes(c, params, stored_bytes, 1.0, cuda);
}

double on_load_projection_bytes(LoadQuantization q) {
  switch (q) {
    case LoadQuantization::Fp8:
    case LoadQuantization::Int8: return 1.0;
    case LoadQuantization::Int4: return 0.5 + 4.0 / 128.0;  // nibbles and an F32 scale per 128
    case LoadQuantization::None: break;
  }
  return 0.0;
}

int64_t on_load_weight_bytes(const ModelConfig& c, int64_t params, int64_t stored_bytes, double projection_bytes,
                             bool cuda) {
  const int64_t embed = c.vocab_size * c.hidden_size * (c.tie_word_embeddings ? 1 : 2);
  const int64_t projections = std::max<int64_t>(0, params - embed);
  const double stored = params > 0 ? static_cast<double>(stored_bytes) / static_cast<double>(params) : 2.0;
  return static_cast<int64_t>(static_cast<double>(projections) * projection_bytes) +
         static_cast<int64_t>(static_cast<double>(params - projections) * (cuda ? 2.0 : stored));
}

MemoryEstimate estimate_memory(const ModelConfig& c, int64_t weight_bytes, int64_t context_tokens, DType kv_dtype,
                               int64_t max_batched_tokens) {
  MemoryEstimate m;
  m.weights = weight_bytes;
  m.kv_bytes_per_token = 2 * c.num_hidden_layers * c.num_key_value_heads * c.head_dim *
                         static_cast<int64_t>(dtype_size(kv_dtype));
  // The cache is allocated in whole 16-token blocks.
  const int64_t tokens = (std::max<int64_t>(context_tokens, 0) + 15) / 16 * 16;
  m.kv_cache = m.kv_bytes_per_token * tokens;
  // Float32 activations of one step (see core/model/decoder.cpp's workspace) + the logits.
  const int64_t T = std::max<int64_t>(max_batched_tokens, 16);
  const int64_t inter = std::max({c.intermediate_size, c.moe_intermediate_size, c.shared_expert_intermediate_size});
  const int64_t per_token = 6 * c.hidden_size + 2 * c.num_attention_heads * c.head_dim +
                            2 * c.num_key_value_heads * c.head_dim + 3 * inter + 2 * c.num_experts + 2;
  m.activations = 4 * (T * per_token + std::min<int64_t>(T, 256) * c.vocab_size);
  m.total = m.weights + m.kv_cache + m.activations;
  return m;
}

}  // namespace inferdesk
