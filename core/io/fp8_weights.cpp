#include "core/io/fp8_weights.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/io/model_folder.h"
#include "core/util/error.h"
#include "core/util/fp8.h"

namespace inferdesk {
namespace {

[[noreturn]] void bad(const std::string& name, const std::string& reason) {
  throw Error(ErrorCode::Format, "tensor '" + name + "': " + reason);
}

void check_float_dtype(const HostTensor& t) {
  if (t.dtype != DType::F32 && t.dtype != DType::BF16 && t.dtype != DType::F16)
    bad(t.name, std::string("scales must be F32, BF16 or F16, not ") + dtype_name(t.dtype));
}

bool shape_is(const std::vector<int64_t>& s, std::initializer_list<std::vector<int64_t>> options) {
  return std::any_of(options.begin(), options.end(), [&](const std::vector<int64_t>& o) { return s == o; });
}

}  // namespace

HostScales read_weight_scales(const HostTensor& t, const QuantInfo& q, int64_t n, int64_t k) {
  check_float_dtype(t);
  HostScales s;
  switch (q.granularity) {
    case ScaleGranularity::Tensor:
      if (!shape_is(t.shape, {{}, {1}, {1, 1}}))
        bad(t.name, "a per-tensor scale must have shape [] or [1], not " + shape_to_string(t.shape));
      s.rows = s.cols = 1;
      break;
    case ScaleGranularity::Channel:
      if (!shape_is(t.shape, {{n}, {n, 1}}))
        bad(t.name, "per-channel scales of a weight with " + std::to_string(n) + " rows must have shape [" +
                        std::to_string(n) + ", 1], not " + shape_to_string(t.shape));
      s.rows = n;
      s.cols = 1;
      break;
    case ScaleGranularity::Block: {
      if (q.block_n <= 0 || q.block_k <= 0) bad(t.name, "block scales need a block size");
      const int64_t br = (n + q.block_n - 1) / q.block_n, bc = (k + q.block_k - 1) / q.block_k;
      // transformers saves the one scale of a single-block expert as a scalar.
      const bool scalar = br * bc == 1 && shape_is(t.shape, {{}, {1}});
      if (!scalar && t.shape != std::vector<int64_t>{br, bc})
        bad(t.name, "block scales of a [" + std::to_string(n) + ", " + std::to_string(k) + "] weight in " +
                        std::to_string(q.block_n) + "x" + std::to_string(q.block_k) + " blocks must have shape [" +
                        std::to_string(br) + ", " + std::to_string(bc) + "], not " + shape_to_string(t.shape));
      s.rows = br;
      s.cols = bc;
      break;
    }
    case ScaleGranularity::Group: bad(t.name, "group scales belong to integer weights, not FP8");
  }
  if (t.numel() != s.rows * s.cols || static_cast<int64_t>(t.nbytes) != t.numel() * int64_t(dtype_size(t.dtype)))
    bad(t.name, "holds the wrong number of bytes for its shape");
  s.values.resize(static_cast<size_t>(s.rows * s.cols));
  for (int64_t i = 0; i < s.rows * s.cols; ++i) {
    const float v = float_at(t, i);
    if (!std::isfinite(v) || v < 0.0f)
      bad(t.name, "scale " + std::to_string(i) + " is " + std::to_string(v) + " (scales must be finite and >= 0)");
    s.values[static_cast<size_t>(i)] = v;
  }
  return s;
}

float read_input_scale(const HostTensor& t) {
  check_float_dtype(t);
  if (!shape_is(t.shape, {{}, {1}, {1, 1}}))
    bad(t.name, "an input scale must have shape [] or [1], not " + shape_to_string(t.shape));
  const float v = float_at(t, 0);
  if (!std::isfinite(v) || v <= 0.0f) bad(t.name, "input scale " + std::to_string(v) + " must be finite and > 0");
  return v;
}

QuantizedHost quantize_fp8_per_channel(const HostTensor& w, int64_t n, int64_t k) {
  if (w.dtype != DType::F32 && w.dtype != DType::BF16 && w.dtype != DType::F16)
    bad(w.name, std::string("only F32, F16 and BF16 weights can be quantized, not ") + dtype_name(w.dtype));
  if (w.numel() != n * k) bad(w.name, "shape does not match [" + std::to_string(n) + ", " + std::to_string(k) + "]");
  QuantizedHost out;
  out.codes.resize(static_cast<size_t>(n * k));
  out.scales.rows = n;
  out.scales.cols = 1;
  out.scales.values.resize(static_cast<size_t>(n));
  std::vector<float> row(static_cast<size_t>(k));
  for (int64_t r = 0; r < n; ++r) {
    float amax = 0.0f;
    for (int64_t c = 0; c < k; ++c) {
      row[c] = float_at(w, r * k + c);
      if (!std::isfinite(row[c])) bad(w.name, "holds a non-finite value in row " + std::to_string(r));
      amax = std::max(amax, std::fabs(row[c]));
    }
    // An all-zero row keeps scale 1 so that its codes (all zero) still decode to zero. The scale is
    // rounded to the weight's own dtype, which the checkpoint stores it in.
    float s = amax / kFp8E4M3Max;
    if (w.dtype == DType::BF16) s = bf16_to_f32(f32_to_bf16(s));
    if (w.dtype == DType::F16) s = f16_to_f32(f32_to_f16(s));
    if (!(s > 0.0f)) s = 1.0f;
    out.scales.values[r] = s;
    for (int64_t c = 0; c < k; ++c) out.codes[r * k + c] = f32_to_fp8_e4m3(row[c] / s);
  }
  return out;
}

HostScales stack_scales(const std::vector<HostScales>& parts, const std::vector<int64_t>& rows, const QuantInfo& q,
                        QuantInfo& stacked, const std::string& what) {
  stacked = q;
  HostScales s;
  if (q.granularity == ScaleGranularity::Block) {
    for (size_t i = 0; i < parts.size(); ++i) {
      if (rows[i] % q.block_n != 0)
        throw Error(ErrorCode::Unsupported, what + ": a part of " + std::to_string(rows[i]) +
                                                " rows does not fill whole " + std::to_string(q.block_n) +
                                                "-row scale blocks, so it cannot be stacked with the others");
      s.rows += parts[i].rows;
      s.cols = parts[i].cols;
      s.values.insert(s.values.end(), parts[i].values.begin(), parts[i].values.end());
    }
    return s;
  }
  // Tensor and channel scales stack as one scale per output row.
  stacked.granularity = ScaleGranularity::Channel;
  s.cols = 1;
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool per_tensor = parts[i].rows * parts[i].cols == 1 && q.granularity == ScaleGranularity::Tensor;
    for (int64_t r = 0; r < rows[i]; ++r) s.values.push_back(per_tensor ? parts[i].values[0] : parts[i].values[r]);
    s.rows += rows[i];
  }
  return s;
}

}  // namespace inferdesk
