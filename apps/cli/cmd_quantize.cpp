// inferdesk-cli quantize: a BF16/F16/F32 model folder saved as an FP8 compressed-tensors folder
// (core/io/fp8_export.h) that InferDesk and vLLM load as published.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "apps/cli/commands.h"
#include "apps/cli/load_progress.h"
#include "apps/cli/units.h"
#include "core/io/fp8_export.h"
#include "core/io/model_folder.h"

namespace inferdesk::cli {

namespace {

struct QuantizeArgs {
  std::string model, out, scheme = "fp8";
  bool json = false;
};

void run_quantize(const QuantizeArgs& a) {
  const ModelFolder folder = ModelFolder::open(a.model);
  LoadProgressPrinter printer(!a.json, "quantizing");
  Fp8ExportOptions o;
  LoadProgress cb = printer.callback();
  o.progress = [&](int64_t done, int64_t total) { return cb(done, total); };
  const Fp8ExportResult r = export_fp8_compressed_tensors(folder, a.out, o);
  printer.finish();
  if (a.json) {
    std::printf("%s\n", nlohmann::json{{"out", a.out},
                                       {"scheme", "fp8-dynamic (compressed-tensors, per-channel)"},
                                       {"quantized_linears", r.quantized},
                                       {"weight_bytes", r.bytes},
                                       {"shards", r.shards}}
                            .dump()
                            .c_str());
    return;
  }
  std::printf("%s: %d projections quantized to FP8 (per channel, dynamic per-token activations), %s in %d "
              "shard%s\n",
              a.out.c_str(), r.quantized, format_bytes(r.bytes).c_str(), r.shards, r.shards == 1 ? "" : "s");
}

}  // namespace

void register_quantize(CLI::App& app) {
  auto a = std::make_shared<QuantizeArgs>();
  CLI::App* c = app.add_subcommand(
      "quantize", "Save a model folder quantized to FP8 as a compressed-tensors folder (loads as published)");
  c->add_option("--model", a->model, "Hugging Face model folder (BF16, F16 or F32)")->required();
  c->add_option("--out", a->out, "Folder to create (must not exist)")->required();
  c->add_option("--scheme", a->scheme, "Quantization scheme")->check(CLI::IsMember({"fp8"}))->default_val("fp8");
  c->add_flag("--json", a->json, "One JSON object on stdout");
  c->callback([a] { run_quantize(*a); });
}

}  // namespace inferdesk::cli
