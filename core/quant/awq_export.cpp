#include "core/quant/awq_export.h"

#include <unistd.h>

#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/io/json_util.h"
#include "core/io/safetensors_writer.h"
#include "core/util/error.h"

namespace inferdesk {
namespace fs = std::filesystem;
namespace {

// Slot j of a packed word holds column 8c + kAwqOrder[j] (the order AutoAWQ's GEMM kernel reads).
constexpr int kAwqOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};

void put_word(std::vector<uint8_t>& out, size_t i, uint32_t w) { std::memcpy(out.data() + 4 * i, &w, 4); }

// 8 unsigned nibbles of columns 8c.. of one row (k) or group (g): value(n) in [0, 15].
template <class F>
uint32_t pack_word(int64_t c, F value) {
  uint32_t w = 0;
  for (int j = 0; j < 8; ++j) w |= static_cast<uint32_t>(value(8 * c + kAwqOrder[j]) & 0xf) << (4 * j);
  return w;
}

void copy_small_files(const fs::path& src, const fs::path& dst) {
  for (const auto& e : fs::directory_iterator(src)) {
    const std::string n = e.path().filename().string();
    if (!e.is_regular_file() || n == "config.json" || n.ends_with(".safetensors") ||
        n.ends_with(".safetensors.index.json") || e.file_size() > (64u << 20))
      continue;
    fs::copy_file(e.path(), dst / n);
  }
}

std::vector<uint8_t> copy_bytes(const HostTensor& t) {
  const auto* p = reinterpret_cast<const uint8_t*>(t.data);
  return std::vector<uint8_t>(p, p + t.nbytes);
}

// The output tensors in name order: packed projections, replaced vectors, the rest as is.
std::vector<SafetensorsOut> plan(const ModelFolder& src, const AwqResult& awq, int32_t& quantized) {
  std::vector<SafetensorsOut> out;
  for (const std::string& name : src.tensor_names()) {
    const HostTensor* t = src.find(name);
    const std::string module = name.ends_with(".weight") ? name.substr(0, name.size() - 7) : "";
    const auto q = module.empty() ? awq.linears.end() : awq.linears.find(module);
    if (q != awq.linears.end()) {
      const HostIntWeight* h = &q->second;
      const int64_t N = h->rows, K = h->scheme.in_features, G = h->scales.cols;
      auto part = [h](int i) {
        return [h, i] {
          AwqPacked p = pack_awq(*h);
          return i == 0 ? std::move(p.qweight) : i == 1 ? std::move(p.qzeros) : std::move(p.scales);
        };
      };
      out.push_back({module + ".qweight", "I32", {K, N / 8}, K * N / 2, part(0)});
      out.push_back({module + ".qzeros", "I32", {G, N / 8}, G * N / 2, part(1)});
      out.push_back({module + ".scales", "F16", {G, N}, G * N * 2, part(2)});
      ++quantized;
      continue;
    }
    const auto r = awq.replaced.find(name);
    const std::string dt = dtype_name(t->dtype);
    if (r != awq.replaced.end()) {
      const std::vector<float>* v = &r->second;
      out.push_back({name, dt, t->shape, static_cast<int64_t>(t->nbytes), [v, dt] { return float_bytes(*v, dt); }});
    } else {
      out.push_back({name, dt, t->shape, static_cast<int64_t>(t->nbytes), [t] { return copy_bytes(*t); }});
    }
  }
  return out;
}

void write_config(const ModelFolder& src, const fs::path& dir) {
  nlohmann::json cfg = parse_json_lenient(read_file_bounded(src.dir() / "config.json", kMaxConfigJsonBytes),
                                          (src.dir() / "config.json").string());
  cfg["quantization_config"] = {
      {"bits", 4},         {"group_size", kAwqGroup}, {"modules_to_not_convert", nullptr}, {"quant_method", "awq"},
      {"version", "gemm"}, {"zero_point", true}};
  std::ofstream c(dir / "config.json");
  c << cfg.dump(2);
  c.close();
  if (!c) throw Error(ErrorCode::Io, "cannot write " + (dir / "config.json").string());
}

}  // namespace

AwqPacked pack_awq(const HostIntWeight& h) {
  if (h.scheme.bits != 4 || !h.scheme.has_zero_point || h.scheme.granularity != ScaleGranularity::Group ||
      h.scheme.act_order || h.rows % 8 != 0)
    throw Error(ErrorCode::Internal, "pack_awq: not a 4-bit grouped weight with zero points and 8k outputs");
  const int64_t N = h.rows, K = h.scheme.in_features, G = h.scales.cols, C = N / 8;
  AwqPacked p;
  p.qweight.resize(static_cast<size_t>(K * C * 4));
  p.qzeros.resize(static_cast<size_t>(G * C * 4));
  p.scales.resize(static_cast<size_t>(G * N * 2));
  for (int64_t k = 0; k < K; ++k)
    for (int64_t c = 0; c < C; ++c)
      put_word(p.qweight, static_cast<size_t>(k * C + c), pack_word(c, [&](int64_t n) { return h.code(n, k) + 8; }));
  for (int64_t g = 0; g < G; ++g) {
    for (int64_t c = 0; c < C; ++c)
      put_word(p.qzeros, static_cast<size_t>(g * C + c), pack_word(c, [&](int64_t n) {
                 return static_cast<int32_t>(h.zeros[static_cast<size_t>(n * G + g)]) + 8;
               }));
    for (int64_t n = 0; n < N; ++n) {
      const uint16_t s = f32_to_f16(h.scales.values[static_cast<size_t>(n * G + g)]);
      std::memcpy(p.scales.data() + 2 * (g * N + n), &s, 2);
    }
  }
  return p;
}

AwqExportResult export_awq_folder(const ModelFolder& src, const AwqResult& awq, const fs::path& out,
                                  const AwqExportOptions& options) {
  if (fs::exists(out)) throw Error(ErrorCode::InvalidArgument, out.string() + " already exists");
  if (awq.linears.empty()) throw Error(ErrorCode::InvalidArgument, "the AWQ result holds no quantized projections");
  AwqExportResult result;
  const std::vector<SafetensorsOut> tensors = plan(src, awq, result.quantized);
  for (const SafetensorsOut& t : tensors) result.bytes += t.bytes;
  const fs::path tmp = out.parent_path() / (out.filename().string() + ".partial-" + std::to_string(getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  try {
    write_safetensors(tmp / "model.safetensors", tensors,
                      [&](int64_t done) { return !options.progress || options.progress(done, result.bytes); });
    write_config(src, tmp);
    copy_small_files(src.dir(), tmp);
    src.check_unchanged();  // a source shard cut short while read: what was written holds zeros
    fs::rename(tmp, out);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  return result;
}

}  // namespace inferdesk
