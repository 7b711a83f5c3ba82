// The accuracy report of the in-app quantizations side by side: INT8 round-to-nearest per channel,
// INT4 round-to-nearest group 128 (both quantized on load, symmetric) and AWQ (calibrated on a
// calibration text, written as an AWQ folder to a scratch directory and loaded back through the
// AWQ reader), each against the folder as published (core/engine/quant_eval.h: KL mean/max,
// top-1 agreement, perplexity of both on the evaluation text).
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/engine/quant_eval.h"
#include "core/quant/awq_quantizer.h"

namespace inferdesk {

enum class InAppScheme : uint8_t { Int8Rtn, Int4Rtn, Awq };
const char* scheme_label(InAppScheme s);  // "int8-rtn", "int4-rtn", "awq"

struct SchemeReportOptions {
  std::vector<InAppScheme> schemes = {InAppScheme::Int8Rtn, InAppScheme::Int4Rtn, InAppScheme::Awq};
  int32_t max_tokens = 256;  // of the evaluation text
  int32_t chunk = 128;
  AwqOptions awq;  // its progress is replaced by this report's
  std::function<std::unique_ptr<Backend>()> make_backend;
  // Where the AWQ folder is written while it is measured (removed after); empty: the system's
  // temporary directory.
  std::filesystem::path scratch_dir;
  // (fraction done 0..1); return false to cancel (Error Cancelled).
  std::function<bool(double)> progress;
};

struct SchemeReport {
  InAppScheme scheme;
  QuantEvalReport report;
};

std::vector<SchemeReport> report_in_app_schemes(const std::filesystem::path& dir, const std::vector<int32_t>& eval_ids,
                                                const std::vector<int32_t>& calibration_ids,
                                                const SchemeReportOptions& options = {});

}  // namespace inferdesk
