// Field readers shared by the quantization_config parsers (quant_config.cpp for FP8,
// quant_config_int.cpp for the integer formats): every malformed field is a Format error naming
// it, every value we do not run an Unsupported one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/util/error.h"

namespace inferdesk::quant_fields {

[[noreturn]] inline void bad(const std::string& field, const std::string& reason) {
  throw Error(ErrorCode::Format, "quantization_config \"" + field + "\": " + reason);
}

[[noreturn]] inline void unsupported(const std::string& what) {
  throw Error(ErrorCode::Unsupported, "quantization_config: " + what);
}

inline const nlohmann::json* field(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return (it == j.end() || it->is_null()) ? nullptr : &*it;
}

inline std::string opt_string(const nlohmann::json& j, const char* key, const std::string& path) {
  const nlohmann::json* v = field(j, key);
  if (!v) return "";
  if (!v->is_string()) bad(path + "." + key, "must be a string, got " + v->dump());
  return v->get<std::string>();
}

inline std::vector<std::string> string_list(const nlohmann::json& j, const char* key, const std::string& path) {
  std::vector<std::string> out;
  const nlohmann::json* v = field(j, key);
  if (!v) return out;
  if (!v->is_array()) bad(path + "." + key, "must be a list of strings");
  for (const nlohmann::json& s : *v) {
    if (!s.is_string()) bad(path + "." + key, "must be a list of strings");
    out.push_back(s.get<std::string>());
  }
  return out;
}

inline int64_t opt_int(const nlohmann::json& j, const char* key, const std::string& path, int64_t def) {
  const nlohmann::json* v = field(j, key);
  if (!v) return def;
  if (!v->is_number_integer()) bad(path + "." + key, "must be an integer, got " + v->dump());
  return v->get<int64_t>();
}

inline bool opt_bool(const nlohmann::json& j, const char* key, const std::string& path, bool def) {
  const nlohmann::json* v = field(j, key);
  if (!v) return def;
  if (!v->is_boolean()) bad(path + "." + key, "must be true or false, got " + v->dump());
  return v->get<bool>();
}

}  // namespace inferdesk::quant_fields

namespace inferdesk {
struct QuantConfig;
struct QuantInfo;
namespace quant_int {
// quant_config_int.cpp: the integer formats.
void parse_awq(const nlohmann::json& qc, QuantConfig& c);
void parse_gptq(const nlohmann::json& qc, QuantConfig& c);
// One compressed-tensors group whose weights have "type": "int", in checkpoint format `format`
// ("pack-quantized", "int-quantized" or "naive-quantized").
void parse_ct_int_group(const nlohmann::json& weights, const nlohmann::json* activations, const std::string& path,
                        const std::string& format, QuantInfo& q);
}  // namespace quant_int
}  // namespace inferdesk
