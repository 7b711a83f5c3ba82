// FP8 linear weights on the host: reading a checkpoint's scale tensors (validated against the
// scheme's granularity), quantizing a BF16/F16/F32 weight per output channel, and uploading
// codes + scales to a backend as one quantized Buffer (core/backend/quant.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/model/weights.h"
#include "core/util/host_tensor.h"

namespace inferdesk {

// The scales of an [n, k] weight in `t` (F32, F16 or BF16), whose shape must fit `q`'s granularity:
// Tensor [] / [1] / [1, 1]; Channel [n] / [n, 1]; Block [ceil(n/bn), ceil(k/bk)]. Non-finite or
// negative scales, a wrong shape or dtype are Format errors naming the tensor.
HostScales read_weight_scales(const HostTensor& t, const QuantInfo& q, int64_t n, int64_t k);
// A static activation scale ([] or [1]): finite and positive.
float read_input_scale(const HostTensor& t);

// Per-channel E4M3 quantization as compressed-tensors' FP8_DYNAMIC scheme stores it: the scale of a
// row is amax / 448 rounded to the weight's dtype (which checkpoints store it in), codes =
// sat_e4m3(w / s).
struct QuantizedHost {
  std::vector<uint8_t> codes;  // [n, k]
  HostScales scales;           // [n, 1]
};
QuantizedHost quantize_fp8_per_channel(const HostTensor& w, int64_t n, int64_t k);

// Stacks the scales of weights stacked by rows (q|k|v, gate|up) into one set. Tensor scales that
// differ between parts become per-channel; Block scales need parts whose rows divide block_n.
HostScales stack_scales(const std::vector<HostScales>& parts, const std::vector<int64_t>& rows, const QuantInfo& q,
                        QuantInfo& stacked, const std::string& what);

}  // namespace inferdesk
