#include "apps/cli/cli_common.h"

#include <charconv>
#include <cstdio>
#include <filesystem>

#include "apps/cli/load_progress.h"
#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/cuda_module.h"
#include "core/backend/cuda_option_table.h"
#include "core/util/error.h"
#include "core/util/install_layout.h"

namespace inferdesk::cli {

CudaBackendOptions cuda_backend_options(const BackendChoice& choice) {
  CudaBackendOptions o;
  o.cuda_graphs = choice.cuda_graphs;
  o.pdl = choice.pdl;
  for (const std::string& kv : choice.cuda_options) apply_cuda_option(o, kv);
  return o;
}

std::unique_ptr<Backend> make_backend(const BackendChoice& choice) {
  if (choice.name == "cpu") {
    if (!choice.cuda_options.empty()) throw Error(ErrorCode::InvalidArgument, "--cuda-option needs --backend cuda");
    // The pool refuses more than its cap itself (ThreadPool::kMaxThreads); a negative count is
    // a typo here, not "all cores".
    if (choice.threads < 0)
      throw Error(ErrorCode::InvalidArgument, "--threads must be 0 (every hardware thread) or a positive count, got " +
                                                  std::to_string(choice.threads));
    return make_cpu_backend(choice.threads);
  }
  if (choice.name == "cuda") {
    const CudaBackendOptions options = cuda_backend_options(choice);  // bad options fail first
    const CudaModule cuda = CudaModule::load(module_dirs(executable_path()));
    if (!cuda.usable())
      throw Error(ErrorCode::Unsupported, "CUDA is not available: " + cuda.reason() + "; use --backend cpu");
    return cuda.create(options);
  }
  throw Error(ErrorCode::InvalidArgument, "unknown backend '" + choice.name + "' (cpu, cuda)");
}

void add_backend_options(CLI::App* c, BackendChoice& b) {
  c->add_option("--backend", b.name, "cpu or cuda")->default_val("cpu");
  c->add_option("--threads", b.threads, "CPU threads (0: all cores; at most 1024)");
  c->add_option("--gpu-memory-utilization", b.gpu_memory_utilization,
                "CUDA: fraction of GPU memory for weights, activations and the KV cache")
      ->check(CLI::Range(0.05, 1.0))
      ->default_val(0.90);
  c->add_flag("!--no-cuda-graphs", b.cuda_graphs, "CUDA: run decode steps eagerly");
  c->add_flag("!--no-pdl", b.pdl, "CUDA: no programmatic dependent launch between kernels");
  c->add_flag("--overlap-steps,!--no-overlap-steps", b.overlap_steps,
              "CUDA: launch each decode step before the previous step's tokens reach the host "
              "(default; --no-overlap-steps: one step at a time)");
  c->add_option("--block-size", b.block_size, "tokens per KV-cache block (paged attention)")
      ->check(CLI::IsMember({8, 16, 32, 64, 128}))
      ->default_val(16);
  c->add_option("--quantization", b.quantization,
                "quantize the weights as they load: fp8 (E4M3 per channel, dynamic per-token activations), "
                "int8 (per channel, weight-only) or int4 (groups of 128, weight-only), both round-to-nearest; "
                "refused for a folder that is already quantized, which loads as published; with --dummy also "
                "awq (int4 group 128 with zero points), gptq (int4 group 128), w8a16 (int8 per channel) or "
                "w8a8 (int8 per channel, int8 dynamic activations): random codes of that scheme")
      ->check(CLI::IsMember({"none", "fp8", "int8", "int4", "awq", "gptq", "w8a16", "w8a8"}))
      ->default_val("none");
  c->add_option("--kv-cache-dtype", b.kv_cache_dtype,
                "KV cache precision: auto (the backend's activations), fp8 (E4M3 with the checkpoint's "
                "per-layer scales, 1.0 without: half the memory of BF16) or int8 (per token and head, "
                "scale and zero point computed online; CPU backend)")
      ->check(CLI::IsMember({"auto", "fp8", "int8"}))
      ->default_val("auto");
  c->add_option("--cuda-option", b.cuda_options, "CUDA: tuning key=value, repeatable (see the list below)")
      ->type_name("KEY=VALUE");
  c->footer("CUDA options (--cuda-option key=value; defaults shown):\n" + cuda_option_help());
}

EngineOptions engine_options(const BackendChoice& b, int64_t kv_cache_mb) {
  if (kv_cache_mb < 0) throw Error(ErrorCode::InvalidArgument, "--kv-cache-mb must be >= 0");
  EngineOptions o;
  o.kv_cache_bytes = kv_cache_mb << 20;
  o.gpu_memory_utilization = b.gpu_memory_utilization;
  o.overlap_steps = b.overlap_steps;
  o.block_size = b.block_size;
  o.kv_cache_dtype = b.kv_cache_dtype == "fp8"    ? KvCacheDtype::Fp8
                     : b.kv_cache_dtype == "int8" ? KvCacheDtype::Int8
                                                  : KvCacheDtype::Auto;
  return o;
}

LoadedModel load_for_cli(const std::string& model_dir, const std::string& dummy_shape, const BackendChoice& backend,
                         bool progress) {
  if (model_dir.empty() == dummy_shape.empty())
    throw Error(ErrorCode::InvalidArgument, "give exactly one of --model DIR or --dummy SHAPE");
  LoadProgressPrinter printer(progress);
  LoadOptions lo;
  lo.quantization = parse_load_quantization(backend.quantization);
  lo.quantize_lm_head = backend.quantize_lm_head;
  LoadedModel m = model_dir.empty() ? load_dummy_model(dummy_shape, default_shapes_dir(executable_path()),
                                                       make_backend(backend), 1, printer.callback(), lo)
                                    : load_model_folder(model_dir, make_backend(backend), printer.callback(), lo);
  printer.finish();
  return m;
}

std::vector<int32_t> parse_id_list(const std::string& text, const std::string& what) {
  const std::string form = " (comma-separated integers >= 0 with nothing between them, e.g. 1,2,3)";
  if (text.empty()) throw Error(ErrorCode::InvalidArgument, what + ": no token ids given" + form);
  std::vector<int32_t> ids;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    // Digits only: stoll alone would take " 1", "+1" and "1e3"'s "1".
    const bool digits = !item.empty() && item.size() <= 10 && item.find_first_not_of("0123456789") == std::string::npos;
    const long long v = digits ? std::stoll(item) : -1;
    if (!digits || v > INT32_MAX)
      throw Error(ErrorCode::InvalidArgument,
                  what + ": " + (item.empty() ? "an empty entry" : "'" + item + "' is not a token id") + form);
    ids.push_back(static_cast<int32_t>(v));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return ids;
}

uint64_t parse_non_negative(const std::string& text, const std::string& what) {
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || text[0] == '-' || text[0] == '+' || ec != std::errc() || p != end)
    throw Error(ErrorCode::InvalidArgument, what + " must be an integer >= 0, got '" + text + "'");
  return v;
}

std::ifstream open_input_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) throw Error(ErrorCode::NotFound, "cannot open " + what + " " + path);
  if (!std::filesystem::is_regular_file(st))
    throw Error(ErrorCode::InvalidArgument,
                what + " " + path + " is " +
                    (std::filesystem::is_directory(st) ? "a directory" : "not a regular file") + "; give a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::Io, "cannot read " + what + " " + path);
  return in;
}

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Cancelled: return "abort";
    case FinishReason::Error: return "error";
    case FinishReason::None: return "none";
  }
  return "none";
}

nlohmann::json result_to_json(const GenerationResult& r, int32_t num_logprobs) {
  nlohmann::json j;
  j["tokens"] = r.token_ids();
  if (num_logprobs > 0) {
    nlohmann::json lps = nlohmann::json::array();
    for (const auto& t : r.tokens) {
      nlohmann::json step = nlohmann::json::array();
      for (const auto& e : t.top) step.push_back({{"id", e.id}, {"logprob", e.logprob}});
      lps.push_back(step);
    }
    j["logprobs"] = lps;
  } else {
    j["logprobs"] = nullptr;
  }
  j["finish_reason"] = finish_reason_name(r.reason);
  if (!r.error.empty()) j["error"] = r.error;
  const double decode_s = r.elapsed_s - r.time_to_first_token_s;
  j["timing"] = {{"time_to_first_token_s", r.time_to_first_token_s},
                 {"total_s", r.elapsed_s},
                 {"output_tokens", r.tokens.size()},
                 {"decode_tokens_per_s", r.tokens.size() > 1 && decode_s > 0 ? (r.tokens.size() - 1) / decode_s : 0.0}};
  return j;
}

}  // namespace inferdesk::cli
