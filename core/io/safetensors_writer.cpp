#include "core/io/safetensors_writer.h"

#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/util/dtype.h"
#include "core/util/error.h"

namespace inferdesk {

void write_safetensors(const std::filesystem::path& file, const std::vector<SafetensorsOut>& tensors,
                       const std::function<bool(int64_t)>& after_each) {
  nlohmann::json header = {{"__metadata__", {{"format", "pt"}}}};
  int64_t at = 0;
  for (const SafetensorsOut& t : tensors) {
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {at, at + t.bytes}}};
    at += t.bytes;
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');
  std::ofstream f(file, std::ios::binary | std::ios::trunc);
  const uint64_t n = h.size();
  f.write(reinterpret_cast<const char*>(&n), 8);
  f.write(h.data(), static_cast<std::streamsize>(h.size()));
  int64_t done = 0;
  for (const SafetensorsOut& t : tensors) {
    const std::vector<uint8_t> bytes = t.produce();
    if (static_cast<int64_t>(bytes.size()) != t.bytes)
      throw Error(ErrorCode::Internal, "tensor '" + t.name + "' produced " + std::to_string(bytes.size()) +
                                           " bytes, not " + std::to_string(t.bytes));
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw Error(ErrorCode::Io, "cannot write " + file.string());
    done += t.bytes;
    if (after_each && !after_each(done)) throw Error(ErrorCode::Cancelled, "writing " + file.string() + " was cancelled");
  }
  f.close();
  if (!f) throw Error(ErrorCode::Io, "cannot write " + file.string());
}

std::vector<uint8_t> float_bytes(const std::vector<float>& v, const std::string& dtype) {
  if (dtype == "F32") {
    std::vector<uint8_t> out(v.size() * 4);
    std::memcpy(out.data(), v.data(), out.size());
    return out;
  }
  if (dtype != "F16" && dtype != "BF16") throw Error(ErrorCode::Internal, "float_bytes: " + dtype + " is not a float");
  std::vector<uint8_t> out(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t h = dtype == "BF16" ? f32_to_bf16(v[i]) : f32_to_f16(v[i]);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

}  // namespace inferdesk
