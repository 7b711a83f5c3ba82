// inferdesk-cli info --dummy SHAPE: a built-in shape's scheme, bits per weight and memory estimate
// for the weights `bench --dummy SHAPE --quantization X` would make, without making them.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "apps/cli/cmd_info_dummy.h"
#include "apps/cli/units.h"
#include "core/engine/model_info.h"
#include "core/engine/model_loader.h"
#include "core/util/error.h"
#include "core/util/install_layout.h"
#include "core/util/json_guard.h"
#include "core/util/regular_file.h"

namespace inferdesk::cli {

namespace {

ModelConfig read_shape(const std::string& shape) {
  std::filesystem::path path = shape;
  if (!std::filesystem::exists(path)) path = default_shapes_dir(executable_path()) / (shape + ".json");
  std::string text;
  try {
    text = read_regular_file(path, uint64_t{16} << 20);  // a FIFO here is refused, not waited on
  } catch (const Error& e) {
    if (e.code() != ErrorCode::NotFound) throw;
    throw Error(ErrorCode::NotFound, "unknown model shape '" + shape + "' (looked for " + path.string() + ")");
  }
  return ModelConfig::from_json(parse_untrusted_json(text, path.string()));
}

// Parameters of the projections (q/k/v/o, gate/up/down, experts' w1/w2/w3): what the integer and
// fp8 schemes quantize; embeddings, lm_head, norms and routers stay BF16.
int64_t projection_parameters(const ModelConfig& c) {
  const int64_t H = c.hidden_size, D = c.head_dim;
  int64_t p = 0;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    p += H * c.num_attention_heads * D * 2 + H * c.num_key_value_heads * D * 2;
    p += c.is_moe_layer(i) ? 3 * H * (c.num_experts * c.moe_intermediate_size + c.shared_expert_intermediate_size)
                           : 3 * H * c.intermediate_size;
  }
  return p;
}

// Bytes per projection parameter: codes plus F32 scales (and zero points) per group of 128 or per
// output channel (one scale per row of hidden_size-ish columns).
double projection_bytes(const QuantInfo& q, LoadQuantization lq, int64_t hidden) {
  if (lq == LoadQuantization::Fp8) return 1.0 + 4.0 / static_cast<double>(hidden);
  if (q.scheme != QuantScheme::Int) return 2.0;
  const double per_scale = q.has_zero_point ? 8.0 : 4.0;
  const double cols = q.granularity == ScaleGranularity::Group ? q.group_size : static_cast<double>(hidden);
  return q.bits / 8.0 + per_scale / cols;
}

}  // namespace

void run_info_dummy(const std::string& shape, const std::string& quantization, bool lm_head, int64_t context,
                    bool json) {
  const ModelConfig c = read_shape(shape);
  const LoadQuantization lq = parse_load_quantization(quantization);
  const QuantInfo q = dummy_int_scheme(lq);
  const bool integer = q.scheme == QuantScheme::Int;
  if (lm_head && !integer) throw Error(ErrorCode::InvalidArgument, "--quantize-lm-head needs an integer scheme");
  const ParamCount params = count_parameters(c);
  const int64_t proj = projection_parameters(c);
  const int64_t head = c.vocab_size * c.hidden_size;
  const double per = projection_bytes(q, lq, c.hidden_size);
  // A quantized tied head is a separate copy next to the BF16 embedding.
  const double head_extra = lm_head ? head * projection_bytes(q, lq, c.hidden_size) -
                                          (c.tie_word_embeddings ? 0.0 : 2.0 * static_cast<double>(head))
                                    : 0.0;
  const auto weights = static_cast<int64_t>(static_cast<double>(params.total - proj) * 2.0 + proj * per + head_extra);
  const std::string name = lq == LoadQuantization::None  ? "none (BF16)"
                           : lq == LoadQuantization::Fp8 ? "fp8 e4m3 per-channel, dynamic per-token activations"
                                                         : dummy_scheme_name(lq, lm_head);
  const int64_t ctx = context > 0 ? context : c.max_position_embeddings;
  const MemoryEstimate cpu = estimate_memory(c, weights, ctx, DType::F32);
  const double bits = 8.0 * static_cast<double>(weights) / static_cast<double>(params.total);
  const double proj_bits = 8.0 * per;
  if (json) {
    std::cout << nlohmann::json{{"shape", shape},
                                {"parameters", params.total},
                                {"projection_parameters", proj},
                                {"quantization", name},
                                {"bits_per_weight", bits},
                                {"projection_bits_per_weight", proj_bits},
                                {"weight_bytes", weights},
                                {"estimate_context", ctx},
                                {"cpu_total_bytes", cpu.total},
                                {"cpu_kv_cache_bytes", cpu.kv_cache},
                                {"cuda_runs_weights", !integer}}
                     .dump()
              << std::endl;
    return;
  }
  std::printf("%s (dummy weights): %s parameters, %s in projections\n", shape.c_str(),
              format_count(params.total).c_str(), format_count(proj).c_str());
  std::printf("quantization: %s\n", name.c_str());
  std::printf("%.2f bits per weight overall (projections %.2f); weights %s\n", bits, proj_bits,
              format_bytes(weights).c_str());
  std::printf("memory for %ld tokens of context: CPU %s (KV cache %s)%s\n", static_cast<long>(ctx),
              format_bytes(cpu.total).c_str(), format_bytes(cpu.kv_cache).c_str(),
              integer ? "; CUDA: not run (no integer-weight kernels yet)" : "");
}

}  // namespace inferdesk::cli
