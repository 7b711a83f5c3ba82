#include "core/quant/quant_schemes.h"

#include <unistd.h>

#include "core/quant/awq_export.h"
#include "core/util/error.h"

namespace inferdesk {

const char* scheme_label(InAppScheme s) {
  switch (s) {
    case InAppScheme::Int8Rtn: return "int8-rtn";
    case InAppScheme::Int4Rtn: return "int4-rtn";
    case InAppScheme::Awq: return "awq";
  }
  return "?";
}

std::vector<SchemeReport> report_in_app_schemes(const std::filesystem::path& dir, const std::vector<int32_t>& eval_ids,
                                                const std::vector<int32_t>& calibration_ids,
                                                const SchemeReportOptions& options) {
  const auto make = options.make_backend ? options.make_backend : [] { return make_cpu_backend(0); };
  const double n = static_cast<double>(options.schemes.size());
  std::vector<SchemeReport> out;
  for (size_t i = 0; i < options.schemes.size(); ++i) {
    const InAppScheme s = options.schemes[i];
    // AWQ spends about half its share calibrating, half measuring.
    auto part = [&](double from, double to) {
      return [&, from, to](double f) {
        return !options.progress || options.progress((static_cast<double>(i) + from + (to - from) * f) / n);
      };
    };
    QuantEvalOptions eo;
    eo.max_tokens = options.max_tokens;
    eo.chunk = options.chunk;
    eo.quantization = s == InAppScheme::Int8Rtn ? LoadQuantization::Int8 : LoadQuantization::Int4;
    if (s != InAppScheme::Awq) {
      eo.progress = part(0.0, 1.0);
      out.push_back({s, evaluate_quantization(dir, eval_ids, make, eo)});
      continue;
    }
    AwqOptions ao = options.awq;
    ao.make_backend = make;
    ao.progress = part(0.0, 0.5);
    const AwqResult awq = awq_quantize_model(dir, calibration_ids, ao);
    const std::filesystem::path base = options.scratch_dir.empty() ? std::filesystem::temp_directory_path()
                                                                   : options.scratch_dir;
    const std::filesystem::path folder = base / ("inferdesk-awq-report-" + std::to_string(getpid()));
    std::filesystem::remove_all(folder);
    export_awq_folder(ModelFolder::open(dir), awq, folder);
    eo.quantized_dir = folder;
    eo.progress = part(0.5, 1.0);
    try {
      out.push_back({s, evaluate_quantization(dir, eval_ids, make, eo)});
    } catch (...) {
      std::filesystem::remove_all(folder);
      throw;
    }
    std::filesystem::remove_all(folder);
  }
  return out;
}

}  // namespace inferdesk
