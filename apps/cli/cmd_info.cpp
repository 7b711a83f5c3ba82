// inferdesk-cli info: what a model folder holds and what it will cost to run, before loading.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <set>

#include <nlohmann/json.hpp>

#include "apps/cli/cmd_info_dummy.h"
#include "apps/cli/commands.h"
#include "apps/cli/units.h"
#include "core/chat/model_templates.h"
#include "core/engine/model_info.h"
#include "core/util/error.h"

namespace inferdesk::cli {

namespace {

// The longest context an estimate is made for: config.json's own cap on max_position_embeddings
// (core/model/config.cpp); 2^40 tokens would be a petabyte estimate, not a plan.
constexpr int64_t kMaxContextTokens = int64_t{1} << 27;

struct InfoArgs {
  std::string model;
  std::string dummy;              // a built-in shape instead of a folder (cmd_info_dummy.cpp)
  bool quantize_lm_head = false;  // --dummy with an integer scheme
  int64_t context = 0;
  bool json = false;
  std::string quantization = "none";  // estimate as quantized on load: fp8 | int8 | int4
};

// What the weights will be: the folder's scheme, or the one --quantization would apply on load.
struct Scheme {
  std::string name;
  int64_t cpu_bytes = 0, cuda_bytes = 0;
  bool cuda_runs = true;  // the CUDA backend runs no integer scheme yet
};

Scheme weight_scheme(const ModelInfo& info, const std::string& on_load) {
  const ModelConfig& c = info.config;
  Scheme s;
  if (on_load == "none") {
    s.name = c.quantization.describe();
    s.cpu_bytes = info.weight_bytes;
    s.cuda_bytes = backend_weight_bytes(c, info.params_total, info.weight_bytes, c.quantization.quantized(), true,
                                        false);
    s.cuda_runs = c.quantization.int_packing == IntPacking::None;
    return s;
  }
  if (c.quantization.quantized())
    throw Error(ErrorCode::InvalidArgument, "the folder is already quantized (" + c.quantization.describe() +
                                                "); --quantization applies to unquantized folders");
  const double per_param = on_load == "int4" ? 0.5 + 4.0 / 128.0 : 1.0;
  s.name = on_load == "fp8"    ? "fp8 e4m3 per-channel, dynamic per-token activations (on load)"
           : on_load == "int8" ? "int8 symmetric per-channel, weight-only (on load)"
                               : "int4 symmetric group 128, weight-only (on load)";
  s.cpu_bytes = on_load_weight_bytes(c, info.params_total, info.weight_bytes, per_param, false);
  s.cuda_bytes = on_load_weight_bytes(c, info.params_total, info.weight_bytes, per_param, true);
  s.cuda_runs = on_load == "fp8";
  return s;
}

std::string chat_template_words(const chat::ChatTemplateStatus& s) {
  return s.usable ? "yes" : s.problem.empty() ? "no" : "unusable (" + s.problem + ")";
}

int64_t physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
}

nlohmann::json estimate_json(const MemoryEstimate& m) {
  return {{"weights_bytes", m.weights},
          {"kv_cache_bytes", m.kv_cache},
          {"activations_bytes", m.activations},
          {"total_bytes", m.total},
          {"kv_bytes_per_token", m.kv_bytes_per_token}};
}

// Positions past the trained context are unreliable; the estimate is still printed (a user may
// plan for a RoPE-scaled run), with a warning on stderr and in the JSON.
std::string context_warning(int64_t asked, int64_t model_context) {
  if (model_context <= 0 || asked <= model_context) return "";
  return "--context " + std::to_string(asked) + " exceeds the model's context length (" +
         std::to_string(model_context) + " tokens); output past " + std::to_string(model_context) +
         " tokens is unreliable";
}

void print_info(const ModelInfo& info, const Scheme& scheme, const MemoryEstimate& cpu, const MemoryEstimate& gpu,
                int64_t context, const chat::ChatTemplateStatus& chat_template, int64_t ram) {
  const ModelConfig& c = info.config;
  const std::filesystem::path dir = std::filesystem::absolute(info.dir).lexically_normal();
  const std::string name = (dir.has_filename() ? dir : dir.parent_path()).filename().string();
  std::printf("%s: %s (%s), %s weights, %s parameters", name.c_str(), c.model_type.c_str(), c.architecture.c_str(),
              info.dtype.c_str(), format_count(info.params_total).c_str());
  if (c.is_moe()) std::printf(" (%s active per token)", format_count(info.params_active).c_str());
  std::printf("\n%ld layers, hidden %ld, %ld heads / %ld KV heads of %ld, vocab %ld, context %ld\n",
              static_cast<long>(c.num_hidden_layers), static_cast<long>(c.hidden_size),
              static_cast<long>(c.num_attention_heads), static_cast<long>(c.num_key_value_heads),
              static_cast<long>(c.head_dim), static_cast<long>(c.vocab_size), static_cast<long>(info.context_length));
  const double per_param = info.params_total > 0
                               ? static_cast<double>(scheme.cpu_bytes) / static_cast<double>(info.params_total)
                               : 0.0;
  std::printf("quantization: %s, %.2f bytes per parameter (%.2f bits per weight)\n", scheme.name.c_str(), per_param,
              8 * per_param);
  std::printf("on disk %s in %d shard%s; tokenizer: %s; chat template: %s\n", format_bytes(info.size_on_disk).c_str(),
              info.num_shards, info.num_shards == 1 ? "" : "s", info.has_tokenizer ? "yes" : "no",
              chat_template_words(chat_template).c_str());
  std::printf("memory for %ld tokens of context: CPU %s (KV cache %s), ", static_cast<long>(context),
              format_bytes(cpu.total).c_str(), format_bytes(cpu.kv_cache).c_str());
  if (scheme.cuda_runs)
    std::printf("CUDA %s (KV cache %s)\n", format_bytes(gpu.total).c_str(), format_bytes(gpu.kv_cache).c_str());
  else
    std::printf("CUDA: not run (the CUDA backend has no integer-weight kernels yet)\n");
  if (ram > 0 && cpu.total > ram)
    std::printf("does not fit in this machine's %s of RAM at this context; use --context\n", format_bytes(ram).c_str());
}

void run_info(const InfoArgs& a) {
  if (a.context < 0 || a.context > kMaxContextTokens)
    throw Error(ErrorCode::InvalidArgument, "--context must be a number of tokens in 1.." +
                                                std::to_string(kMaxContextTokens) + " (leave it out for the model's)");
  if (a.model.empty() == a.dummy.empty())
    throw Error(ErrorCode::InvalidArgument, "give exactly one of --model DIR or --dummy SHAPE");
  if (!a.dummy.empty()) {
    run_info_dummy(a.dummy, a.quantization, a.quantize_lm_head, a.context, a.json);
    return;
  }
  const std::set<std::string> on_load = {"none", "fp8", "int8", "int4"};
  if (!on_load.count(a.quantization))
    throw Error(ErrorCode::InvalidArgument, "--quantization " + a.quantization +
                                                " describes dummy weights (--dummy); a folder in that format "
                                                "is described as published");
  const ModelInfo info = inspect_model_folder(a.model);
  const ModelConfig& c = info.config;
  const int64_t context = a.context > 0 ? a.context : info.context_length;
  // CPU keeps the weights as stored and a float32 cache; the CUDA backend keeps BF16 weights (FP8
  // ones as stored) and a BF16 cache.
  const Scheme scheme = weight_scheme(info, a.quantization);
  const MemoryEstimate cpu = estimate_memory(c, scheme.cpu_bytes, context, DType::F32);
  const MemoryEstimate gpu = estimate_memory(c, scheme.cuda_bytes, context, DType::BF16);
  const int64_t ram = physical_memory();
  const chat::ChatTemplateStatus chat_template = chat::chat_template_status(a.model);
  const std::string warning = context_warning(context, info.context_length);
  if (!warning.empty()) std::fprintf(stderr, "warning: %s\n", warning.c_str());
  if (!chat_template.problem.empty())
    std::fprintf(stderr, "warning: the chat template cannot be used: %s\n", chat_template.problem.c_str());
  if (!a.json) {
    print_info(info, scheme, cpu, gpu, context, chat_template, ram);
    return;
  }
  nlohmann::json j = {{"model_type", c.model_type},
                      {"architecture", c.architecture},
                      {"dtype", info.dtype},
                      {"dtype_bytes", info.dtype_bytes},
                      {"parameters", info.params_total},
                      {"active_parameters", info.params_active},
                      {"layers", c.num_hidden_layers},
                      {"hidden_size", c.hidden_size},
                      {"attention_heads", c.num_attention_heads},
                      {"kv_heads", c.num_key_value_heads},
                      {"head_dim", c.head_dim},
                      {"vocab_size", c.vocab_size},
                      {"experts", c.num_experts},
                      {"experts_per_token", c.num_experts_per_tok},
                      {"context_length", info.context_length},
                      {"weight_bytes", info.weight_bytes},
                      {"quantization", scheme.name},
                      {"bytes_per_parameter", info.params_total > 0 ? static_cast<double>(scheme.cpu_bytes) /
                                                                          static_cast<double>(info.params_total)
                                                                    : 0.0},
                      {"cuda_runs_weights", scheme.cuda_runs},
                      {"size_on_disk", info.size_on_disk},
                      {"shards", info.num_shards},
                      {"has_tokenizer", info.has_tokenizer},
                      {"has_chat_template", chat_template.usable},
                      {"chat_template_error",
                       chat_template.problem.empty() ? nlohmann::json(nullptr) : nlohmann::json(chat_template.problem)},
                      {"estimate_context", context},
                      {"cpu_estimate", estimate_json(cpu)},
                      {"cuda_estimate", estimate_json(gpu)},
                      {"physical_memory_bytes", ram},
                      {"fits_in_ram", ram == 0 || cpu.total <= ram},
                      {"warnings", warning.empty() ? nlohmann::json::array() : nlohmann::json::array({warning})}};
  std::cout << j.dump() << std::endl;
}

}  // namespace

void register_info(CLI::App& app) {
  auto a = std::make_shared<InfoArgs>();
  CLI::App* c = app.add_subcommand("info", "Describe a model folder and estimate its memory");
  c->add_option("--model", a->model, "Hugging Face model folder");
  c->add_option("--dummy", a->dummy, "Built-in shape (e.g. llama-3.2-1b): the weights bench --dummy would make");
  c->add_flag("--quantize-lm-head", a->quantize_lm_head, "--dummy: with lm_head quantized too");
  c->add_option("--context", a->context, "Context tokens for the memory estimate (default: the model's; more warns)");
  c->add_flag("--json", a->json, "One JSON object on stdout");
  c->add_option("--quantization", a->quantization,
                "estimate the folder as quantized on load: fp8, int8 (per channel) or int4 (groups of 128); "
                "with --dummy also awq, gptq, w8a16, w8a8")
      ->check(CLI::IsMember({"none", "fp8", "int8", "int4", "awq", "gptq", "w8a16", "w8a8"}))
      ->default_val("none");
  c->callback([a] { run_info(*a); });
}

}  // namespace inferdesk::cli
