// inferdesk-cli quantize: a BF16/F16/F32 model folder saved as an FP8 compressed-tensors folder
// (core/io/fp8_export.h) that InferDesk and vLLM load as published, and/or the report of what FP8
// changes (core/engine/quant_eval.h) on the shipped evaluation text.
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "apps/cli/cli_common.h"
#include "apps/cli/cmd_quantize_awq.h"
#include "apps/cli/commands.h"
#include "apps/cli/load_progress.h"
#include "apps/cli/units.h"
#include "core/engine/quant_eval.h"
#include "core/io/fp8_export.h"
#include "core/io/model_folder.h"
#include "core/tokenizer/tokenizer.h"
#include "core/util/error.h"
#include "core/util/install_layout.h"

namespace inferdesk::cli {

namespace {

struct QuantizeArgs {
  std::string model, out, scheme = "fp8", text, calibration;
  int32_t calibration_tokens = 512;
  bool report = false, json = false;
  int32_t tokens = 256;
  BackendChoice backend;
};

nlohmann::json save(const QuantizeArgs& a, const ModelFolder& folder) {
  LoadProgressPrinter printer(!a.json, "quantizing");
  Fp8ExportOptions o;
  LoadProgress cb = printer.callback();
  o.progress = [&](int64_t done, int64_t total) { return cb(done, total); };
  const Fp8ExportResult r = export_fp8_compressed_tensors(folder, a.out, o);
  printer.finish();
  if (!a.json)
    std::printf("%s: %d projections quantized to FP8 (per channel, dynamic per-token activations), %s in %d "
                "shard%s\n",
                a.out.c_str(), r.quantized, format_bytes(r.bytes).c_str(), r.shards, r.shards == 1 ? "" : "s");
  return {{"out", a.out}, {"quantized_linears", r.quantized}, {"weight_bytes", r.bytes}, {"shards", r.shards}};
}

std::string read_text(const std::string& path) {
  const std::filesystem::path p =
      path.empty() ? resources_dir(executable_path()) / "eval" / "declaration.txt" : std::filesystem::path(path);
  std::ifstream in(p);
  if (!in) throw Error(ErrorCode::NotFound, "cannot read the evaluation text " + p.string());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

nlohmann::json report(const QuantizeArgs& a) {
  const std::vector<int32_t> ids = Tokenizer::from_dir(a.model).encode(read_text(a.text), false);
  LoadProgressPrinter printer(!a.json, "measuring");
  LoadProgress cb = printer.callback();
  QuantEvalOptions o;
  o.max_tokens = a.tokens;
  o.measure_speed = a.backend.name == "cuda";
  o.progress = [&](double f) { return cb(static_cast<int64_t>(f * 1000), 1000); };
  const QuantEvalReport r = evaluate_quantization(
      a.model, ids, [&] { return make_backend(a.backend); }, o);
  printer.finish();
  if (!a.json) {
    std::printf("FP8 on load against the folder as published, %d tokens of text on %s:\n", r.tokens,
                a.backend.name.c_str());
    std::printf("  perplexity   %.4f -> %.4f (%+.2f%%)\n", r.perplexity_base, r.perplexity_quant,
                100.0 * (r.perplexity_quant / r.perplexity_base - 1.0));
    std::printf("  KL           %.3g mean, %.3g max; top-1 agreement %.1f%%\n", r.kl_mean, r.kl_max,
                100.0 * r.top1_agreement);
    std::printf("  weights      %s -> %s\n", format_bytes(r.weight_bytes_base).c_str(),
                format_bytes(r.weight_bytes_quant).c_str());
    if (o.measure_speed)
      std::printf("  decode       %.1f -> %.1f tok/s (batch 1)\n", r.decode_tps_base, r.decode_tps_quant);
  }
  return {{"tokens", r.tokens},
          {"perplexity_base", r.perplexity_base},
          {"perplexity_quant", r.perplexity_quant},
          {"kl_mean", r.kl_mean},
          {"kl_max", r.kl_max},
          {"top1_agreement", r.top1_agreement},
          {"weight_bytes_base", r.weight_bytes_base},
          {"weight_bytes_quant", r.weight_bytes_quant},
          {"decode_tps_base", r.decode_tps_base},
          {"decode_tps_quant", r.decode_tps_quant}};
}

void run_quantize(const QuantizeArgs& a) {
  if (a.out.empty() && !a.report) throw Error(ErrorCode::InvalidArgument, "give --out NEW_DIR, --report or both");
  if (a.tokens < 2) throw Error(ErrorCode::InvalidArgument, "--tokens must be at least 2");
  if (a.scheme == "awq") {
    const AwqCliArgs w{a.model, a.out, a.calibration, a.text, a.tokens, a.calibration_tokens, a.json, a.backend};
    nlohmann::json j = {{"scheme", "awq (int4 group 128, zero points, gemm)"}};
    if (!a.out.empty()) j["saved"] = save_awq(w);
    if (a.report) j["report"] = report_schemes(w);
    if (a.json) std::printf("%s\n", j.dump().c_str());
    return;
  }
  if (!a.calibration.empty()) throw Error(ErrorCode::InvalidArgument, "--calibration is for --method awq");
  const ModelFolder folder = ModelFolder::open(a.model);
  nlohmann::json j = {{"scheme", "fp8-dynamic (compressed-tensors, per-channel)"}};
  if (!a.out.empty()) j["saved"] = save(a, folder);
  if (a.report) j["report"] = report(a);
  if (a.json) std::printf("%s\n", j.dump().c_str());
}

}  // namespace

void register_quantize(CLI::App& app) {
  auto a = std::make_shared<QuantizeArgs>();
  CLI::App* c = app.add_subcommand("quantize",
                                   "Save a model folder quantized to FP8 (compressed-tensors) or AWQ int4, and/or report "
                                   "what quantization changes (perplexity, KL divergence, top-1, size, speed)");
  c->add_option("--model", a->model, "Hugging Face model folder (BF16, F16 or F32)")->required();
  c->add_option("--out", a->out, "Folder to create (must not exist)");
  c->add_option("--method,--scheme", a->scheme,
                "fp8: per-channel FP8, no calibration; awq: int4 group 128 calibrated on a text (CPU); its "
                "--report compares INT8 RTN, INT4 RTN and AWQ")
      ->check(CLI::IsMember({"fp8", "awq"}))
      ->default_val("fp8");
  c->add_option("--calibration", a->calibration,
                "Calibration text for --method awq (default: the shipped public-domain text)");
  c->add_option("--calibration-tokens", a->calibration_tokens, "Tokens of the calibration text AWQ uses")
      ->default_val(512)
      ->check(CLI::Range(2, 1 << 20));
  c->add_flag("--report", a->report,
              "Compare the model as published with FP8 on load on a text: perplexity, KL divergence, top-1 "
              "agreement, weight bytes and, on CUDA, batch-1 decode tok/s");
  c->add_option("--text", a->text, "Text file for --report (default: the shipped public-domain text)");
  c->add_option("--tokens", a->tokens, "Tokens of the text --report compares")->default_val(256);
  c->add_flag("--json", a->json, "One JSON object on stdout");
  add_backend_options(c, a->backend);
  c->callback([a] { run_quantize(*a); });
}

}  // namespace inferdesk::cli
