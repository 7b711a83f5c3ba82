// Integer linear weights on the host: every on-disk packing (AWQ, GPTQ, compressed-tensors) read
// with strict validation and converted into the one canonical layout of core/backend/quant.h, the
// round-to-nearest quantizers of quantize-on-load, and the upload of codes, scales, zero points and
// g_idx to a backend.
//
// On disk, for a linear weight of N output and K input features, G groups, pf = 32 / bits values
// per int32 word, value j of a word in bits [j*bits, (j+1)*bits):
//   AWQ (gemm):   qweight I32 [K, N/8], word (k, c) holds columns n = 8c + {0,2,4,6,1,3,5,7}[j]
//                 (AutoAWQ's interleaved order); qzeros I32 [G, N/8] in the same order; scales
//                 [G, N]; unsigned codes u and zeros uz: w = (u - uz) * s.
//   GPTQ:         qweight I32 [K/pf, N], word (r, n) holds rows k = r*pf + j; qzeros I32 [G, N/pf],
//                 word (g, c) holds columns n = c*pf + j and, in the original "gptq" format, the zero
//                 point minus one ("gptq_v2": the zero point); scales [G, N]; g_idx I32 [K] (the
//                 group of each input column; desc_act checkpoints permute it); w = (u - uz) * s,
//                 symmetric checkpoints use uz = 2^(bits-1) whatever qzeros holds (as vLLM does).
//   compressed-tensors pack-quantized: weight_packed I32 [N, ceil(K/pf)], word (n, c) holds
//                 columns k = c*pf + j as value + 2^(bits-1); weight_scale [N, G] (channel: [N, 1]);
//                 weight_shape [2] = [N, K]; symmetric: w = value * s.
//   compressed-tensors int-quantized: weight I8 [N, K]; weight_scale [N, 1]; w = value * s.
// Scales are F16, BF16 or F32 on disk and F32 in memory. Every wrong shape or dtype, missing
// tensor, non-finite scale, out-of-range g_idx or zero point is a Format error naming the tensor.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/model/quant_config.h"
#include "core/model/weights.h"
#include "core/util/host_tensor.h"

namespace inferdesk {

// An integer weight in the canonical layout (quant.h).
struct HostIntWeight {
  QuantInfo scheme;            // Int: bits, granularity, group_size, in_features, flags (no pointers)
  int64_t rows = 0;            // N
  std::vector<uint8_t> codes;  // I8 [N, K] (8-bit) or U8 [N, ceil(K/2)] (4-bit)
  HostScales scales;           // [N, G]
  std::vector<float> zeros;    // [N, G] when scheme.has_zero_point
  std::vector<int32_t> g_idx;  // [K] when scheme.act_order

  int64_t code_cols() const;  // K (8-bit) or ceil(K/2) (4-bit)
  DType code_dtype() const { return scheme.bits == 4 ? DType::U8 : DType::I8; }
  int32_t code(int64_t n, int64_t k) const;        // the signed value of q[n, k]
  void set_code(int64_t n, int64_t k, int32_t v);  // v in the signed range of `bits`
  int64_t group_of(int64_t k) const;               // the scale column of input column k
  float dequantized(int64_t n, int64_t k) const;
};

// How a reader finds the tensors beside a module: nullptr when absent.
using TensorLookup = std::function<const HostTensor*(const std::string&)>;

// Whether module `module` holds integer weights of `packing` (its packed tensor is there).
bool has_int_weight(IntPacking packing, const std::string& module, const TensorLookup& find);

// Reads module `module`'s packed tensors (an [n, k] weight quantized as `scheme` says) and converts
// them into the canonical layout.
HostIntWeight read_int_weight(IntPacking packing, const QuantInfo& scheme, const std::string& module, int64_t n,
                              int64_t k, const TensorLookup& find);

// Round-to-nearest quantization (no calibration) of an F32 / F16 / BF16 [n, k] weight, symmetric,
// weight-only: int8 per output channel (s = amax / 127) and int4 in groups of `group` input columns
// (s = amax / 7, codes clamped to [-8, 7]; a last partial group when group does not divide k).
HostIntWeight quantize_int8_per_channel(const HostTensor& w, int64_t n, int64_t k);
HostIntWeight quantize_int4_group(const HostTensor& w, int64_t n, int64_t k, int64_t group = 128);

// Uploads `codes` (h's codes, which must outlive the weight on backends that read host memory in
// place) with h's scales, zero points and g_idx as one quantized weight. Unsupported, naming `what`,
// when the backend does not run the scheme, before anything is uploaded.
Buffer upload_int_weight(Backend& backend, const HostTensor& codes, const HostIntWeight& h, const std::string& what);

}  // namespace inferdesk
