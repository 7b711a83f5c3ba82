#include "core/engine/model_loader.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/io/folder_weights.h"
#include "core/io/json_util.h"
#include "core/model/model_validation.h"
#include "core/util/error.h"
#include "core/util/install_layout.h"

namespace inferdesk {

namespace {

constexpr const char* kFp8OnLoadScheme = "fp8 e4m3 per-channel, dynamic per-token activations (quantized on load)";
constexpr const char* kInt8OnLoadScheme = "int8 symmetric per-channel, weight-only (quantized on load)";
constexpr const char* kInt4OnLoadScheme = "int4 symmetric group 128, weight-only (quantized on load)";

void add_unique(std::vector<int32_t>& out, int64_t id) {
  if (id < 0) return;
  if (std::find(out.begin(), out.end(), static_cast<int32_t>(id)) == out.end()) out.push_back(static_cast<int32_t>(id));
}

// A built-in shape or a user's config.json: opened without blocking on a FIFO, keys unique.
ModelConfig read_config_file(const std::filesystem::path& path) {
  const std::string text = read_file_bounded(path, kMaxConfigJsonBytes);
  return ModelConfig::from_json(parse_json_strict(text, path.string(), kMaxConfigJsonDepth));
}

// Whether `t` is stored the way `q`'s format stores quantized weights.
bool is_quantized_tensor(const HostTensor& t, const QuantConfig& q) {
  const auto ends_with = [&](const char* suffix) {
    const std::string_view n = t.name, s = suffix;
    return n.size() >= s.size() && n.substr(n.size() - s.size()) == s;
  };
  switch (q.int_packing) {
    case IntPacking::Awq:
    case IntPacking::Gptq:
    case IntPacking::GptqV2: return ends_with(".qweight");
    case IntPacking::CtPacked: return ends_with(".weight_packed");
    case IntPacking::CtInt8: return t.dtype == DType::I8;
    case IntPacking::None: break;
  }
  return t.dtype == DType::F8E4M3;
}

// A quantization_config over a folder holding no tensor in its format (an "awq" config on BF16
// weights) describes other weights than these: refused, not silently read as unquantized.
void check_quantized_tensors_present(const ModelFolder& folder) {
  const QuantConfig& q = folder.config().quantization;
  if (!q.quantized()) return;
  for (const SafetensorsFile& shard : folder.shards())
    for (const HostTensor& t : shard.tensors())
      if (is_quantized_tensor(t, q)) return;
  throw Error(ErrorCode::Format, "config.json's quantization_config says " + q.describe() +
                                     ", but no tensor of the checkpoint is stored in that format");
}

}  // namespace

ParamCount count_parameters(const ModelConfig& c) {
  const int64_t H = c.hidden_size, D = c.head_dim;
  int64_t attn = H * c.num_attention_heads * D * 2 + H * c.num_key_value_heads * D * 2 + 2 * H;
  if (c.attention_bias) attn += (c.num_attention_heads + 2 * c.num_key_value_heads) * D;
  if (c.qk_norm) attn += 2 * D;
  const int64_t embed = c.vocab_size * H * (c.tie_word_embeddings ? 1 : 2);
  ParamCount p;
  p.total = embed + H;
  p.active = embed + H;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    p.total += attn;
    p.active += attn;
    if (c.is_moe_layer(i)) {
      const int64_t expert = 3 * H * c.moe_intermediate_size;
      const int64_t shared = 3 * H * c.shared_expert_intermediate_size +
                             (c.shared_expert_intermediate_size > 0 ? H : 0);
      p.total += c.num_experts * expert + shared + c.num_experts * H;
      p.active += c.num_experts_per_tok * expert + shared + c.num_experts * H;
    } else {
      p.total += 3 * H * c.intermediate_size;
      p.active += 3 * H * c.intermediate_size;
    }
  }
  return p;
}

QuantInfo dummy_int_scheme(LoadQuantization lq) {
  QuantInfo q;
  if (lq == LoadQuantization::None || lq == LoadQuantization::Fp8) return q;
  q.scheme = QuantScheme::Int;
  const bool four = lq == LoadQuantization::Int4 || lq == LoadQuantization::Awq || lq == LoadQuantization::Gptq;
  q.bits = four ? 4 : 8;
  q.granularity = four ? ScaleGranularity::Group : ScaleGranularity::Channel;
  q.group_size = four ? 128 : 0;
  q.has_zero_point = lq == LoadQuantization::Awq;
  q.act = lq == LoadQuantization::W8A8 ? ActQuant::DynamicToken : ActQuant::None;
  return q;
}

LoadQuantization parse_load_quantization(const std::string& name) {
  static const std::pair<const char*, LoadQuantization> kNames[] = {
      {"none", LoadQuantization::None},   {"fp8", LoadQuantization::Fp8},  {"int8", LoadQuantization::Int8},
      {"int4", LoadQuantization::Int4},   {"awq", LoadQuantization::Awq},  {"gptq", LoadQuantization::Gptq},
      {"w8a16", LoadQuantization::W8A16}, {"w8a8", LoadQuantization::W8A8}};
  for (const auto& [n, q] : kNames)
    if (name == n) return q;
  throw Error(ErrorCode::InvalidArgument, "unknown quantization '" + name + "'");
}

std::string dummy_scheme_name(LoadQuantization lq, bool quantize_lm_head) {
  const char* format = lq == LoadQuantization::Awq     ? "awq"
                       : lq == LoadQuantization::Gptq  ? "gptq"
                       : lq == LoadQuantization::W8A16 ? "w8a16"
                       : lq == LoadQuantization::W8A8  ? "w8a8"
                       : lq == LoadQuantization::Int8  ? "int8 (round-to-nearest)"
                                                       : "int4 (round-to-nearest)";
  return std::string(format) + ": " + describe(dummy_int_scheme(lq)) + ", random codes; embeddings BF16, lm_head " +
         (quantize_lm_head ? "quantized too" : "BF16 (as published checkpoints keep it)");
}

void validate_model_folder(const ModelFolder& folder, WeightSource& weights) {
  validate_generation_config(folder.generation_config(), folder.config().vocab_size,
                             (folder.dir() / "generation_config.json").string());
  check_quantized_tensors_present(folder);
  validate_model_tensors(folder.config(), weights);
}

LoadedModel load_model_folder(const std::filesystem::path& dir, std::unique_ptr<Backend> backend,
                              const LoadProgress& progress, const LoadOptions& options) {
  LoadedModel m;
  m.folder = std::make_unique<ModelFolder>(ModelFolder::open(dir));
  m.config = m.folder->config();
  m.backend = std::move(backend);
  if (options.quantization > LoadQuantization::Int4 || options.quantize_lm_head)
    throw Error(ErrorCode::InvalidArgument,
                "awq, gptq, w8a16, w8a8 and a quantized lm_head are dummy-weight schemes; a folder in one of "
                "these formats is loaded as published (no --quantization)");
  FolderWeightsOptions wo;
  wo.quantize_fp8 = options.quantization == LoadQuantization::Fp8;
  wo.quantize_int = options.quantization == LoadQuantization::Int8   ? IntOnLoad::Int8Channel
                    : options.quantization == LoadQuantization::Int4 ? IntOnLoad::Int4Group128
                                                                     : IntOnLoad::None;
  const bool on_load = wo.quantize_fp8 || wo.quantize_int != IntOnLoad::None;
  m.weights = make_folder_weights(*m.folder, wo);
  validate_model_folder(*m.folder, *m.weights);
  m.model = load_model(m.config, *m.weights, *m.backend, progress);
  m.quantization = wo.quantize_fp8                              ? kFp8OnLoadScheme
                   : wo.quantize_int == IntOnLoad::Int8Channel  ? kInt8OnLoadScheme
                   : wo.quantize_int == IntOnLoad::Int4Group128 ? kInt4OnLoadScheme
                                                                : m.config.quantization.describe();
  KvScales kv = read_kv_scales(*m.folder, m.config.num_hidden_layers);
  m.kv_k_scales = std::move(kv.k);
  m.kv_v_scales = std::move(kv.v);
  for (int64_t id : m.config.eos_token_ids) add_unique(m.eos_token_ids, id);
  for (int64_t id : m.folder->generation_config().eos_token_ids) add_unique(m.eos_token_ids, id);
  m.name = std::filesystem::absolute(dir).lexically_normal().filename().string();
  if (m.name.empty()) m.name = std::filesystem::absolute(dir).parent_path().filename().string();
  m.folder->check_unchanged();  // a shard cut short while loading: what was copied is zeros
  // Quantized on load, the weights take what the backend holds, not what the folder stores.
  m.weight_bytes = on_load ? m.backend->memory_info().weights : m.folder->weight_bytes();
  return m;
}

LoadedModel load_dummy_model(const std::string& shape, const std::filesystem::path& shapes_dir,
                             std::unique_ptr<Backend> backend, uint64_t seed, const LoadProgress& progress,
                             const LoadOptions& options) {
  std::filesystem::path path = shape;
  if (!std::filesystem::exists(path)) path = shapes_dir / (shape + ".json");
  if (!std::filesystem::exists(path)) {
    std::string names;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(shapes_dir, ec))
      if (e.path().extension() == ".json") names.append(" ").append(e.path().stem().string());
    throw Error(ErrorCode::NotFound,
                "unknown model shape '" + shape + "' (built-in:" + names + ", looked in " + shapes_dir.string() + ")");
  }
  LoadedModel m;
  m.config = read_config_file(path);
  m.backend = std::move(backend);
  m.weight_bytes = count_parameters(m.config).total * 2;
  const bool fp8 = options.quantization == LoadQuantization::Fp8;
  const QuantInfo int_scheme = dummy_int_scheme(options.quantization);
  const bool integer = int_scheme.scheme == QuantScheme::Int;
  if (options.quantize_lm_head && !integer)
    throw Error(ErrorCode::InvalidArgument, "a quantized lm_head needs an integer --quantization");
  m.weights = integer ? make_dummy_int_weights(seed, m.weight_bytes, m.config.tie_word_embeddings, int_scheme,
                                               options.quantize_lm_head)
                      : make_dummy_weights(seed, m.weight_bytes, m.config.tie_word_embeddings, fp8);
  // Quantized projections take fewer bytes: the bytes loaded say what the weights take.
  int64_t loaded = 0;
  m.model = load_model(m.config, *m.weights, *m.backend, [&](int64_t done, int64_t total) {
    loaded = done;
    return !progress || progress(done, total);
  });
  if (fp8 || integer) {
    m.quantization = fp8 ? kFp8OnLoadScheme : dummy_scheme_name(options.quantization, options.quantize_lm_head);
    m.weight_bytes = loaded;
  }
  for (int64_t id : m.config.eos_token_ids) add_unique(m.eos_token_ids, id);
  m.name = shape;
  return m;
}

std::filesystem::path default_shapes_dir(const std::filesystem::path& exe_path) {
  return resources_dir(exe_path) / "shapes";
}

}  // namespace inferdesk
