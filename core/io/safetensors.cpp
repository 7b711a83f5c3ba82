#include "core/io/safetensors.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <tuple>
#include <utility>

#include "core/io/json_util.h"
#include "core/util/error.h"
#include "core/util/json_guard.h"

namespace inferdesk {
namespace {

using nlohmann::json;

// Dtypes the safetensors format defines but this engine does not compute with.
constexpr std::array<std::string_view, 11> kKnownUnsupportedDtypes = {"F64",     "I16",     "U16",     "U32",
                                                                      "U64",     "BOOL",    "F8_E8M0", "F4",
                                                                      "F6_E2M3", "F6_E3M2", "C64"};

struct Entry {
  HostTensor tensor;
  uint64_t begin = 0;
  uint64_t end = 0;
};

[[noreturn]] void fail(ErrorCode code, const std::string& source, const std::string& name, const std::string& reason) {
  throw Error(code, source + ": tensor " + quote_untrusted(name) + ": " + reason);
}

bool read_u64(const json& v, uint64_t& out) {
  if (v.is_number_unsigned()) {
    out = v.get<uint64_t>();
    return true;
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0) {
    out = static_cast<uint64_t>(v.get<int64_t>());
    return true;
  }
  return false;
}

DType parse_entry_dtype(const json& obj, const std::string& source, const std::string& name) {
  auto it = obj.find("dtype");
  if (it == obj.end() || !it->is_string()) {
    fail(ErrorCode::Format, source, name, "missing or non-string \"dtype\"");
  }
  const auto& s = it->get_ref<const std::string&>();
  if (auto dt = parse_dtype(s)) return *dt;
  bool known = std::find(kKnownUnsupportedDtypes.begin(), kKnownUnsupportedDtypes.end(), s) !=
               kKnownUnsupportedDtypes.end();
  if (known) {
    fail(ErrorCode::Unsupported, source, name,
         "dtype " + s + " is not supported (supported: F32, F16, BF16, F8_E4M3, F8_E5M2, I32, I64, I8, U8)");
  }
  fail(ErrorCode::Format, source, name, "unknown dtype \"" + s + "\"");
}

// Returns the element count; fills `shape`.
uint64_t parse_entry_shape(const json& obj, const std::string& source, const std::string& name,
                           std::vector<int64_t>& shape) {
  auto it = obj.find("shape");
  if (it == obj.end() || !it->is_array()) {
    fail(ErrorCode::Format, source, name, "missing or non-array \"shape\"");
  }
  if (it->size() > kSafetensorsMaxRank) {
    fail(ErrorCode::Format, source, name,
         "rank " + std::to_string(it->size()) + " exceeds the limit of " + std::to_string(kSafetensorsMaxRank));
  }
  uint64_t numel = 1;
  for (const auto& d : *it) {
    uint64_t dim = 0;
    if (!read_u64(d, dim) || dim > static_cast<uint64_t>(INT64_MAX)) {
      fail(ErrorCode::Format, source, name, "shape entries must be non-negative integers");
    }
    if (__builtin_mul_overflow(numel, dim, &numel)) {
      fail(ErrorCode::Format, source, name, "shape element count overflows 64 bits");
    }
    shape.push_back(static_cast<int64_t>(dim));
  }
  return numel;
}

Entry parse_entry(const std::string& name, const json& obj, const std::byte* data, uint64_t data_size,
                  const std::string& source) {
  if (!obj.is_object()) fail(ErrorCode::Format, source, name, "entry is not a JSON object");
  Entry e;
  e.tensor.name = name;
  e.tensor.dtype = parse_entry_dtype(obj, source, name);
  uint64_t numel = parse_entry_shape(obj, source, name, e.tensor.shape);

  auto it = obj.find("data_offsets");
  if (it == obj.end() || !it->is_array() || it->size() != 2 || !read_u64((*it)[0], e.begin) ||
      !read_u64((*it)[1], e.end)) {
    fail(ErrorCode::Format, source, name,
         "\"data_offsets\" must be an array of two non-negative integers [begin, end]");
  }
  if (e.begin > e.end) {
    fail(ErrorCode::Format, source, name,
         "data_offsets begin " + std::to_string(e.begin) + " > end " + std::to_string(e.end));
  }
  if (e.end > data_size) {
    fail(ErrorCode::Format, source, name,
         "data_offsets end " + std::to_string(e.end) + " is past the end of the data section (" +
             std::to_string(data_size) + " bytes)");
  }
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(numel, static_cast<uint64_t>(dtype_size(e.tensor.dtype)), &nbytes)) {
    fail(ErrorCode::Format, source, name, "byte size overflows 64 bits");
  }
  if (nbytes != e.end - e.begin) {
    fail(ErrorCode::Format, source, name,
         "shape and dtype need " + std::to_string(nbytes) + " bytes but data_offsets span " +
             std::to_string(e.end - e.begin));
  }
  e.tensor.nbytes = static_cast<size_t>(nbytes);
  e.tensor.data = data == nullptr ? nullptr : data + e.begin;
  return e;
}

std::map<std::string, std::string> parse_metadata(const json& v, const std::string& source) {
  if (!v.is_object()) {
    throw Error(ErrorCode::Format, source + ": \"__metadata__\" is not a JSON object");
  }
  std::map<std::string, std::string> out;
  for (const auto& [k, val] : v.items()) {
    if (!val.is_string()) {
      throw Error(ErrorCode::Format, source + ": \"__metadata__\" value for \"" + k + "\" is not a string");
    }
    out.emplace(k, val.get<std::string>());
  }
  return out;
}

// The tensors must tile [0, data_size) exactly: no gap, no overlap, nothing after the last one.
void check_coverage(std::vector<Entry>& entries, uint64_t data_size, const std::string& source) {
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return std::tie(a.begin, a.end) < std::tie(b.begin, b.end); });
  uint64_t pos = 0;
  const std::string* prev = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < pos) {
      fail(ErrorCode::Format, source, e.tensor.name,
           "data [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + ") overlaps tensor " +
               quote_untrusted(*prev) + " (which ends at " + std::to_string(pos) + ")");
    }
    if (e.begin > pos) {
      fail(ErrorCode::Format, source, e.tensor.name,
           "gap in the data section: bytes [" + std::to_string(pos) + ", " + std::to_string(e.begin) +
               ") belong to no tensor");
    }
    pos = e.end;
    prev = &e.tensor.name;
  }
  if (pos != data_size) {
    throw Error(ErrorCode::Format, source + ": data section is " + std::to_string(data_size) +
                                       " bytes but the tensors cover only " + std::to_string(pos) +
                                       " (trailing bytes)");
  }
}

}  // namespace

SafetensorsHeader parse_safetensors_header(std::string_view header_json, const std::byte* data, uint64_t data_size,
                                           const std::string& source) {
  // Valid headers nest three deep (root -> entry -> shape); allow one spare level. The root holds
  // the tensors and "__metadata__".
  json root = parse_json_strict(header_json, source + " (header)", 4, kSafetensorsMaxTensors + 1);
  if (!root.is_object()) {
    throw Error(ErrorCode::Format, source + ": header is not a JSON object");
  }
  SafetensorsHeader out;
  std::vector<Entry> entries;
  entries.reserve(root.size());
  for (const auto& [name, value] : root.items()) {
    if (name == "__metadata__") {
      if (!value.is_null()) out.metadata = parse_metadata(value, source);  // null: none
      continue;
    }
    entries.push_back(parse_entry(name, value, data, data_size, source));
  }
  check_coverage(entries, data_size, source);
  out.tensors.reserve(entries.size());
  for (Entry& e : entries) out.tensors.push_back(std::move(e.tensor));
  return out;
}

namespace {

// Another format under a .safetensors name (a renamed download, a wrong conversion): say what the
// file is, instead of a header length of 7 quintillion bytes.
void refuse_foreign_format(const std::byte* base, size_t size, const std::string& source) {
  auto at = [&](size_t i) { return i < size ? static_cast<uint8_t>(base[i]) : 0; };
  const std::string not_st = source + ": this is not a safetensors file although its name says so: it is ";
  if (at(0) == 0x80 && at(1) >= 2 && at(1) <= 5) {
    throw Error(ErrorCode::Unsupported, not_st +
                                            "a Python pickle (a PyTorch checkpoint written by torch.save?). Pickle "
                                            "files are refused because loading them can run arbitrary code. " +
                                            kConvertToSafetensorsHint);
  }
  if (at(0) == 'P' && at(1) == 'K' && at(2) == 3 && at(3) == 4) {
    throw Error(ErrorCode::Unsupported, not_st +
                                            "a zip archive, the format of a PyTorch checkpoint written by torch.save "
                                            "(a pickle inside). Pickle files are refused because loading them can "
                                            "run arbitrary code. " +
                                            kConvertToSafetensorsHint);
  }
  if (at(0) == 'G' && at(1) == 'G' && at(2) == 'U' && at(3) == 'F') {
    throw Error(ErrorCode::Unsupported, not_st +
                                            "a GGUF file (llama.cpp's format), which InferDesk does not load. Use the "
                                            "model's Hugging Face safetensors files instead (the repository the GGUF "
                                            "was converted from).");
  }
}

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
  SafetensorsFile f;
  f.file_ = MappedFile::open(path);
  const std::string source = path.string();
  const size_t size = f.file_.size();
  refuse_foreign_format(f.file_.data(), size, source);
  if (size < 8) {
    throw Error(ErrorCode::Format, source + ": file is " + std::to_string(size) +
                                       " bytes, too short for a safetensors header (8-byte length)");
  }
  const std::byte* base = f.file_.data();
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(base[i]);
  if (header_len > kSafetensorsMaxHeaderBytes) {
    throw Error(ErrorCode::Format, source + ": header length " + std::to_string(header_len) + " exceeds the limit of " +
                                       std::to_string(kSafetensorsMaxHeaderBytes) + " bytes");
  }
  if (header_len > size - 8) {
    throw Error(ErrorCode::Format, source + ": header length " + std::to_string(header_len) +
                                       " is larger than the rest of the file (" + std::to_string(size - 8) +
                                       " bytes; truncated file?)");
  }
  std::string_view header(reinterpret_cast<const char*>(base + 8), static_cast<size_t>(header_len));
  const uint64_t data_size = size - 8 - header_len;
  const std::byte* data = base + 8 + header_len;
  try {
    f.header_ = parse_safetensors_header(header, data, data_size, source);
  } catch (const Error&) {
    if (f.invalidated()) throw f.changed_on_disk_error();  // the header read as zeros
    throw;
  }
  if (f.invalidated()) throw f.changed_on_disk_error();
  return f;
}

const HostTensor* SafetensorsFile::find(std::string_view name) const {
  for (const auto& t : header_.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

}  // namespace inferdesk
