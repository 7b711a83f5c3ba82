// Saving an AWQ calibration (awq_quantizer.h) as the AWQ folder AutoAWQ writes and vLLM loads:
// every quantized projection as `<module>.qweight` I32 [K, N/8] (AutoAWQ's interleaved order, see
// core/io/int_weights.h), `<module>.qzeros` I32 [G, N/8] and `<module>.scales` F16 [G, N]; the
// scaled norm weights (and bias) with their new values in their own dtype; every other tensor as
// it is; config.json with quantization_config {bits 4, group_size 128, modules_to_not_convert
// null, quant_method awq, version gemm, zero_point true}; the tokenizer and other small files
// copied. One model.safetensors (no shards). InferDesk reloads it through its AWQ reader.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>

#include "core/io/model_folder.h"
#include "core/quant/awq_quantizer.h"

namespace inferdesk {

struct AwqExportOptions {
  // (bytes written, total); return false to cancel (nothing is left, Error Cancelled).
  std::function<bool(int64_t, int64_t)> progress;
};

struct AwqExportResult {
  int64_t bytes = 0;      // of model.safetensors' tensors
  int32_t quantized = 0;  // projections written as qweight/qzeros/scales
};

// The AWQ tensors of one weight: qweight, qzeros and scales bytes (h: 4-bit, group, zero points).
struct AwqPacked {
  std::vector<uint8_t> qweight, qzeros, scales;
};
AwqPacked pack_awq(const HostIntWeight& h);

// Writes `out` (which must not exist: InvalidArgument) built beside it and renamed into place, so
// nothing is left under `out` on failure or cancel. Throws Error (Io, Cancelled, InvalidArgument).
AwqExportResult export_awq_folder(const ModelFolder& src, const AwqResult& awq, const std::filesystem::path& out,
                                  const AwqExportOptions& options = {});

}  // namespace inferdesk
