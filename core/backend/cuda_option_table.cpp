#include "core/backend/cuda_option_table.h"

#include <algorithm>
#include <charconv>
#include <cstdint>

#include "core/util/error.h"

namespace inferdesk {

namespace {

// One option: exactly one of the accessors is set; integers are checked against [min, max] and
// stored multiplied by `scale` (MiB options kept in bytes).
struct Entry {
  const char* key;
  const char* help;
  bool* (*flag)(CudaBackendOptions&) = nullptr;
  int32_t* (*i32)(CudaBackendOptions&) = nullptr;
  int64_t* (*i64)(CudaBackendOptions&) = nullptr;
  int64_t min = 0, max = 0, scale = 1;
};

const std::vector<Entry>& entries() {
  using O = CudaBackendOptions;
  static const std::vector<Entry> table = {
      {"decode_waves", "decode attention: split short grids into about this many waves", nullptr,
       [](O& o) { return &o.tuning.decode_waves; }, nullptr, 1, 64},
      {"decode_min_keys", "decode attention: fewest keys per split", nullptr,
       [](O& o) { return &o.tuning.decode_min_keys; }, nullptr, 1, 1 << 20},
      {"decode_heads_per_block", "decode attention: query heads per block for grids of few blocks", nullptr,
       [](O& o) { return &o.tuning.decode_heads_per_block; }, nullptr, 1, 16},
      {"decode_max_heads", "decode attention: most query heads per block", nullptr,
       [](O& o) { return &o.tuning.decode_max_heads; }, nullptr, 1, 16},
      {"decode_mma", "decode attention: tensor-core kernel for grids of many blocks",
       [](O& o) { return &o.tuning.decode_mma; }},
      {"wide_swiglu", "Hopper: SwiGLU gate/up GEMM of decode batches on the wide kernel",
       [](O& o) { return &o.tuning.wide_swiglu; }},
      {"wide_ksplit", "Hopper: plain GEMMs of decode batches on the K-split wide kernel",
       [](O& o) { return &o.tuning.wide_ksplit; }},
      {"wide_min_rows", "Hopper: fewest rows the wide kernels serve", nullptr,
       [](O& o) { return &o.tuning.wide_min_rows; }, nullptr, 9, 4096},
      {"fused_norm", "Hopper: residual add and RMSNorm fused into the K-split GEMM",
       [](O& o) { return &o.fused_norm; }},
      {"small_batch_gemv", "GEMV kernels for <= 8 rows and the small/grouped MoE paths",
       [](O& o) { return &o.small_batch_gemv; }},
      {"moe_grouped_max_pairs", "MoE: most (token, expert) pairs on the grouped path (0: none)", nullptr,
       [](O& o) { return &o.moe_grouped_max_pairs; }, nullptr, 0, 1 << 20},
      {"moe_grouped_pairs_per_expert", "MoE: grouped path's pairs per expert (0: none)", nullptr,
       [](O& o) { return &o.moe_grouped_pairs_per_expert; }, nullptr, 0, 4096},
      {"moe_scratch_mb", "MoE: scratch bound in MiB (0: a 64th of the GPU, 256 MiB .. 2 GiB)", nullptr, nullptr,
       [](O& o) { return &o.moe_scratch_bytes; }, 0, 1 << 20, 1 << 20},
      {"sampling_copy_stream", "sampling uploads and downloads on their own stream",
       [](O& o) { return &o.tuning.sampling_copy_stream; }},
      {"step_timing", "print per-step forward, sampling and idle times at exit",
       [](O& o) { return &o.tuning.step_timing; }},
      {"gemm_log", "print each autotuned cuBLASLt shape and its algorithm", [](O& o) { return &o.tuning.gemm_log; }},
  };
  return table;
}

std::string known_keys() {
  std::string s;
  for (const Entry& e : entries()) s += (s.empty() ? "" : ", ") + std::string(e.key);
  return s;
}

bool parse_flag(const std::string& v, bool& out) {
  if (v == "1" || v == "true" || v == "on") return out = true, true;
  if (v == "0" || v == "false" || v == "off") return out = false, true;
  return false;
}

std::string value_of(const Entry& e, CudaBackendOptions& o) {
  if (e.flag) return *e.flag(o) ? "1" : "0";
  if (e.i32) return std::to_string(*e.i32(o));
  return std::to_string(*e.i64(o) / e.scale);
}

}  // namespace

std::vector<CudaOptionInfo> cuda_option_list(const CudaBackendOptions& options) {
  CudaBackendOptions o = options;
  std::vector<CudaOptionInfo> out;
  for (const Entry& e : entries()) out.push_back({e.key, e.help, value_of(e, o)});
  return out;
}

void apply_cuda_option(CudaBackendOptions& o, const std::string& key_value) {
  const size_t eq = key_value.find('=');
  if (eq == std::string::npos || eq == 0)
    throw Error(ErrorCode::InvalidArgument,
                "--cuda-option '" + key_value + "': expected key=value (keys: " + known_keys() + ")");
  const std::string key = key_value.substr(0, eq), value = key_value.substr(eq + 1);
  for (const Entry& e : entries()) {
    if (key != e.key) continue;
    if (e.flag) {
      bool b = false;
      if (!parse_flag(value, b))
        throw Error(ErrorCode::InvalidArgument, "--cuda-option " + key + ": '" + value + "' is not 1/0");
      *e.flag(o) = b;
      return;
    }
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || end != value.data() + value.size() || v < e.min || v > e.max)
      throw Error(ErrorCode::InvalidArgument, "--cuda-option " + key + ": '" + value + "' is not an integer in " +
                                                  std::to_string(e.min) + ".." + std::to_string(e.max));
    if (e.i32)
      *e.i32(o) = static_cast<int32_t>(v);
    else
      *e.i64(o) = v * e.scale;
    return;
  }
  throw Error(ErrorCode::InvalidArgument, "--cuda-option: unknown key '" + key + "' (keys: " + known_keys() + ")");
}

std::string cuda_option_help() {
  std::string s;
  for (const CudaOptionInfo& i : cuda_option_list()) {
    std::string kv = i.key + "=" + i.value;
    kv.resize(std::max<size_t>(kv.size() + 2, 34), ' ');
    s += "  " + kv + i.help + "\n";
  }
  return s;
}

}  // namespace inferdesk
