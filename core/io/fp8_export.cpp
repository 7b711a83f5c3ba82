#include "core/io/fp8_export.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "core/io/fp8_weights.h"
#include "core/io/json_util.h"
#include "core/util/error.h"

namespace inferdesk {
namespace fs = std::filesystem;
namespace {

using nlohmann::json;

// One tensor of the output: produced when its shard is written.
struct OutTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  const HostTensor* source = nullptr;  // copied as is, or quantized (codes / scale)
  enum class Kind { Copy, Codes, Scale } kind = Kind::Copy;
};

bool is_projection_weight(const HostTensor& t) {
  const std::string module = weight_module(t.name);
  return t.shape.size() == 2 && !module.empty() && is_projection_module(module) &&
         (t.dtype == DType::BF16 || t.dtype == DType::F16 || t.dtype == DType::F32);
}

// The tensors of the output in name order, and the Linear modules left unquantized.
std::vector<OutTensor> plan(const ModelFolder& src, std::vector<std::string>& ignored) {
  std::vector<OutTensor> out;
  for (const std::string& name : src.tensor_names()) {
    const HostTensor* t = src.find(name);
    if (is_projection_weight(*t)) {
      const std::string module = weight_module(name);
      out.push_back({name, "F8_E4M3", t->shape, t->shape[0] * t->shape[1], t, OutTensor::Kind::Codes});
      out.push_back({module + ".weight_scale",
                     dtype_name(t->dtype),
                     {t->shape[0], 1},
                     t->shape[0] * static_cast<int64_t>(dtype_size(t->dtype)),
                     t,
                     OutTensor::Kind::Scale});
      continue;
    }
    out.push_back({name, dtype_name(t->dtype), t->shape, static_cast<int64_t>(t->nbytes), t, OutTensor::Kind::Copy});
    const std::string module = t->shape.size() == 2 ? weight_module(name) : "";
    if (!module.empty() && name.find("embed_tokens") == std::string::npos) ignored.push_back(module);
  }
  return out;
}

json quantization_config(const std::vector<std::string>& ignored) {
  auto args = [](const char* strategy, bool dynamic, const json& observer) {
    return json{{"actorder", nullptr},
                {"block_structure", nullptr},
                {"dynamic", dynamic},
                {"group_size", nullptr},
                {"num_bits", 8},
                {"observer", observer},
                {"observer_kwargs", json::object()},
                {"strategy", strategy},
                {"symmetric", true},
                {"type", "float"}};
  };
  return {{"config_groups",
           {{"group_0",
             {{"input_activations", args("token", true, nullptr)},
              {"output_activations", nullptr},
              {"targets", {"Linear"}},
              {"weights", args("channel", false, "minmax")}}}}},
          {"format", "float-quantized"},
          {"global_compression_ratio", nullptr},
          {"ignore", ignored},
          {"kv_cache_scheme", nullptr},
          {"quant_method", "compressed-tensors"},
          {"quantization_status", "compressed"}};
}

void write_all(std::ofstream& f, const void* p, size_t n, const fs::path& file) {
  f.write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
  if (!f) throw Error(ErrorCode::Io, "cannot write " + file.string());
}

// The bytes of one output tensor (quantizing its source row by row through the per-channel
// quantizer); `cache` keeps the last quantized weight for its scale, which follows it.
std::vector<uint8_t> tensor_bytes(const OutTensor& t, QuantizedHost& cache, std::string& cached_for) {
  if (t.kind == OutTensor::Kind::Copy) {
    const auto* p = reinterpret_cast<const uint8_t*>(t.source->data);
    return std::vector<uint8_t>(p, p + t.source->nbytes);
  }
  if (cached_for != t.source->name) {
    cache = quantize_fp8_per_channel(*t.source, t.source->shape[0], t.source->shape[1]);
    cached_for = t.source->name;
  }
  if (t.kind == OutTensor::Kind::Codes) return cache.codes;
  std::vector<uint8_t> out(static_cast<size_t>(t.bytes));
  for (size_t r = 0; r < cache.scales.values.size(); ++r) {
    const float s = cache.scales.values[r];  // already representable in the weight's dtype
    if (t.source->dtype == DType::F32) {
      std::memcpy(out.data() + r * 4, &s, 4);
    } else {
      const uint16_t h = t.source->dtype == DType::BF16 ? f32_to_bf16(s) : f32_to_f16(s);
      std::memcpy(out.data() + r * 2, &h, 2);
    }
  }
  return out;
}

struct Shard {
  std::vector<const OutTensor*> tensors;
  int64_t bytes = 0;
};

std::vector<Shard> split(const std::vector<OutTensor>& ts, int64_t max_bytes) {
  std::vector<Shard> shards(1);
  for (const OutTensor& t : ts) {
    if (!shards.back().tensors.empty() && shards.back().bytes + t.bytes > max_bytes) shards.emplace_back();
    shards.back().tensors.push_back(&t);
    shards.back().bytes += t.bytes;
  }
  return shards;
}

void copy_side_files(const fs::path& src, const fs::path& dst) {
  for (const auto& e : fs::directory_iterator(src)) {
    const std::string n = e.path().filename().string();
    const bool weights = n.size() > 12 && (n.ends_with(".safetensors") || n.ends_with(".safetensors.index.json"));
    if (!e.is_regular_file() || weights || n == "config.json" || e.file_size() > (64u << 20)) continue;
    fs::copy_file(e.path(), dst / n);
  }
}

}  // namespace

Fp8ExportResult export_fp8_compressed_tensors(const ModelFolder& src, const fs::path& out,
                                              const Fp8ExportOptions& options) {
  if (src.config().quantization.quantized())
    throw Error(ErrorCode::InvalidArgument,
                "the folder is already quantized (" + src.config().quantization.describe() + ")");
  if (fs::exists(out)) throw Error(ErrorCode::InvalidArgument, out.string() + " already exists");
  std::vector<std::string> ignored;
  const std::vector<OutTensor> tensors = plan(src, ignored);
  const std::vector<Shard> shards = split(tensors, options.max_shard_bytes);
  int64_t total = 0;
  for (const Shard& s : shards) total += s.bytes;

  const fs::path tmp = out.parent_path() / (out.filename().string() + ".partial-" + std::to_string(getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  Fp8ExportResult result;
  try {
    json weight_map = json::object();
    QuantizedHost cache;
    std::string cached_for;
    int64_t done = 0;
    for (size_t i = 0; i < shards.size(); ++i) {
      char name[64];
      std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
      const std::string file = shards.size() == 1 ? "model.safetensors" : name;
      json header = {{"__metadata__", {{"format", "pt"}}}};
      int64_t at = 0;
      for (const OutTensor* t : shards[i].tensors) {
        header[t->name] = {{"dtype", t->dtype}, {"shape", t->shape}, {"data_offsets", {at, at + t->bytes}}};
        at += t->bytes;
        weight_map[t->name] = file;
      }
      std::string h = header.dump();
      h.append((8 - h.size() % 8) % 8, ' ');  // the data section starts 8-byte aligned
      std::ofstream f(tmp / file, std::ios::binary);
      const uint64_t n = h.size();
      write_all(f, &n, 8, tmp / file);
      write_all(f, h.data(), h.size(), tmp / file);
      for (const OutTensor* t : shards[i].tensors) {
        const std::vector<uint8_t> bytes = tensor_bytes(*t, cache, cached_for);
        write_all(f, bytes.data(), bytes.size(), tmp / file);
        done += t->bytes;
        result.quantized += t->kind == OutTensor::Kind::Codes;
        if (options.progress && !options.progress(done, total))
          throw Error(ErrorCode::Cancelled, "saving the FP8 folder was cancelled");
      }
      f.close();
      if (!f) throw Error(ErrorCode::Io, "cannot write " + (tmp / file).string());
    }
    if (shards.size() > 1) {
      std::ofstream idx(tmp / "model.safetensors.index.json");
      idx << json{{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}}.dump(2);
      if (!idx) throw Error(ErrorCode::Io, "cannot write the shard index");
    }
    json cfg = parse_json_strict(read_file_bounded(src.dir() / "config.json", kMaxConfigJsonBytes),
                                 (src.dir() / "config.json").string(), kMaxConfigJsonDepth);
    cfg["quantization_config"] = quantization_config(ignored);
    std::ofstream c(tmp / "config.json");
    c << cfg.dump(2);
    if (!c) throw Error(ErrorCode::Io, "cannot write config.json");
    c.close();
    copy_side_files(src.dir(), tmp);
    src.check_unchanged();  // a source shard cut short while read: the written weights hold zeros
    fs::rename(tmp, out);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  result.bytes = total;
  result.shards = static_cast<int32_t>(shards.size());
  return result;
}

}  // namespace inferdesk
