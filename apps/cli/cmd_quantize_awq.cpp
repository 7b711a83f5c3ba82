#include "apps/cli/cmd_quantize_awq.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "apps/cli/load_progress.h"
#include "apps/cli/units.h"
#include "core/quant/awq_export.h"
#include "core/quant/quant_schemes.h"
#include "core/tokenizer/tokenizer.h"
#include "core/util/error.h"
#include "core/util/install_layout.h"

namespace inferdesk::cli {
namespace fs = std::filesystem;
namespace {

std::string read_resource_text(const std::string& path, const char* folder, const char* file, const char* what) {
  const fs::path p = path.empty() ? resources_dir(executable_path()) / folder / file : fs::path(path);
  std::ifstream in(p);
  if (!in) throw Error(ErrorCode::NotFound, std::string("cannot read the ") + what + " " + p.string());
  std::stringstream s;
  s << in.rdbuf();
  if (s.str().empty()) throw Error(ErrorCode::InvalidArgument, std::string("the ") + what + " " + p.string() + " is empty");
  return s.str();
}

std::vector<int32_t> tokenize(const std::string& model, const std::string& text) {
  if (!fs::exists(fs::path(model) / "tokenizer.json"))
    throw Error(ErrorCode::NotFound, "no tokenizer.json in " + model + ": AWQ calibration and the report tokenize text");
  return Tokenizer::from_dir(model).encode(text, false);
}

std::vector<int32_t> calibration_ids(const AwqCliArgs& a) {
  return tokenize(a.model, read_resource_text(a.calibration, "calibration", "lincoln.txt", "calibration text"));
}

AwqOptions awq_options(const AwqCliArgs& a) {
  AwqOptions o;
  o.max_tokens = a.calibration_tokens;
  o.make_backend = [b = a.backend] { return make_backend(b); };
  return o;
}

}  // namespace

nlohmann::json save_awq(const AwqCliArgs& a) {
  if (fs::exists(a.out)) throw Error(ErrorCode::InvalidArgument, a.out + " already exists");
  const ModelFolder folder = ModelFolder::open(a.model);
  check_awq_quantizable(folder);  // before the calibration passes, not after
  const std::vector<int32_t> ids = calibration_ids(a);
  AwqOptions o = awq_options(a);
  AwqResult r;
  {
    LoadProgressPrinter printer(!a.json, "calibrating");
    LoadProgress cb = printer.callback();
    o.progress = [&](double f) { return cb(static_cast<int64_t>(f * 1000), 1000); };
    r = awq_quantize_model(a.model, ids, o);
    printer.finish();
  }
  LoadProgressPrinter printer(!a.json, "writing");
  AwqExportOptions eo;
  LoadProgress cb = printer.callback();
  eo.progress = [&](int64_t done, int64_t total) { return cb(done, total); };
  const AwqExportResult w = export_awq_folder(folder, r, a.out, eo);
  printer.finish();
  int32_t scaled = 0;
  for (const AwqSearchRecord& s : r.searches) scaled += s.ratio > 0;
  if (!a.json)
    std::printf("%s: %d projections quantized to AWQ int4 group 128 (zero points, gemm packing), %d of %zu scale "
                "searches chose a nonzero ratio, %s, calibrated on %zu tokens\n",
                a.out.c_str(), w.quantized, scaled, r.searches.size(), format_bytes(w.bytes).c_str(),
                std::min<size_t>(ids.size(), static_cast<size_t>(a.calibration_tokens)));
  nlohmann::json searches = nlohmann::json::array();
  for (const AwqSearchRecord& s : r.searches)
    searches.push_back({{"layer", s.layer}, {"group", s.group}, {"ratio", s.ratio}, {"loss", s.loss},
                        {"loss_unscaled", s.loss_unscaled}});
  return {{"out", a.out}, {"quantized_linears", w.quantized}, {"weight_bytes", w.bytes}, {"searches", searches}};
}

nlohmann::json report_schemes(const AwqCliArgs& a) {
  const std::vector<int32_t> eval_ids =
      tokenize(a.model, read_resource_text(a.text, "eval", "declaration.txt", "evaluation text"));
  SchemeReportOptions o;
  o.max_tokens = a.tokens;
  o.awq = awq_options(a);
  o.make_backend = o.awq.make_backend;
  LoadProgressPrinter printer(!a.json, "measuring");
  LoadProgress cb = printer.callback();
  o.progress = [&](double f) { return cb(static_cast<int64_t>(f * 1000), 1000); };
  const std::vector<SchemeReport> rs = report_in_app_schemes(a.model, eval_ids, calibration_ids(a), o);
  printer.finish();
  nlohmann::json out = nlohmann::json::array();
  if (!a.json && !rs.empty())
    std::printf("In-app quantizations against the folder as published, %d tokens of text (perplexity %.4f):\n"
                "  %-9s %10s %10s %7s %11s %10s\n",
                rs[0].report.tokens, rs[0].report.perplexity_base, "scheme", "KL mean", "KL max", "top-1",
                "perplexity", "weights");
  for (const SchemeReport& s : rs) {
    const QuantEvalReport& r = s.report;
    if (!a.json)
      std::printf("  %-9s %10.3g %10.3g %6.1f%% %11.4f %10s\n", scheme_label(s.scheme), r.kl_mean, r.kl_max,
                  100.0 * r.top1_agreement, r.perplexity_quant, format_bytes(r.weight_bytes_quant).c_str());
    out.push_back({{"scheme", scheme_label(s.scheme)}, {"tokens", r.tokens}, {"kl_mean", r.kl_mean},
                   {"kl_max", r.kl_max}, {"top1_agreement", r.top1_agreement},
                   {"perplexity_base", r.perplexity_base}, {"perplexity_quant", r.perplexity_quant},
                   {"weight_bytes_base", r.weight_bytes_base}, {"weight_bytes_quant", r.weight_bytes_quant}});
  }
  return out;
}

}  // namespace inferdesk::cli
