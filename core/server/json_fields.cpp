#include "core/server/json_fields.h"

#include <cmath>

#include "core/server/api_error.h"

namespace inferdesk::server {

namespace {

std::string range_text(double lo, double hi) {
  auto fmt = [](double v) {
    Json j = v;
    return j.dump();
  };
  return "[" + fmt(lo) + ", " + fmt(hi) + "]";
}

}  // namespace

std::optional<int64_t> json_integer(const Json& v, int64_t lo, int64_t hi) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    const auto s = static_cast<int64_t>(u);
    if (s < lo || s > hi) return std::nullopt;
    return s;
  }
  if (v.is_number_integer()) {
    const int64_t s = v.get<int64_t>();
    if (s < lo || s > hi) return std::nullopt;
    return s;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || std::floor(d) != d) return std::nullopt;
    if (d < static_cast<double>(lo) || d > static_cast<double>(hi)) return std::nullopt;
    return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

JsonFields::JsonFields(const Json& body) : body_(body) {
  if (!body_.is_object()) bad_request("the request body must be a JSON object");
}

const Json* JsonFields::raw(const char* key) const {
  const auto it = body_.find(key);
  if (it == body_.end() || it->is_null()) return nullptr;
  return &*it;
}

const Json* JsonFields::object(const char* key) const {
  const Json* v = raw(key);
  if (v && !v->is_object()) bad_request(std::string(key) + " must be an object", key);
  return v;
}

std::optional<double> JsonFields::number(const char* key, double lo, double hi) const {
  const Json* v = raw(key);
  if (!v) return std::nullopt;
  if (!v->is_number()) bad_request(std::string(key) + " must be a number", key);
  const double d = v->get<double>();
  if (!(d >= lo && d <= hi))
    bad_request(std::string(key) + " must be " + range_text(lo, hi) + ", got " + v->dump(), key);
  return d;
}

std::optional<int64_t> JsonFields::integer(const char* key, int64_t lo, int64_t hi) const {
  const Json* v = raw(key);
  if (!v) return std::nullopt;
  if (!v->is_number()) bad_request(std::string(key) + " must be an integer", key);
  const auto i = json_integer(*v, lo, hi);
  if (!i)
    bad_request(std::string(key) + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                    "], got " + v->dump(),
                key);
  return i;
}

std::optional<uint64_t> JsonFields::seed(const char* key) const {
  const Json* v = raw(key);
  if (!v) return std::nullopt;
  if (v->is_number_unsigned()) return v->get<uint64_t>();
  if (v->is_number_integer()) return static_cast<uint64_t>(v->get<int64_t>());
  if (auto i = json_integer(*v, INT64_MIN, INT64_MAX)) return static_cast<uint64_t>(*i);
  bad_request(std::string(key) + " must be an integer", key);
}

std::optional<bool> JsonFields::boolean(const char* key) const {
  const Json* v = raw(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) bad_request(std::string(key) + " must be a boolean", key);
  return v->get<bool>();
}

std::optional<std::string> JsonFields::string(const char* key, size_t max_bytes) const {
  const Json* v = raw(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) bad_request(std::string(key) + " must be a string", key);
  const auto& s = v->get_ref<const std::string&>();
  if (s.size() > max_bytes)
    bad_request(std::string(key) + " is longer than " + std::to_string(max_bytes) + " bytes", key);
  return s;
}

std::optional<std::vector<std::string>> JsonFields::strings(const char* key, size_t max_items, size_t max_bytes) const {
  const Json* v = raw(key);
  if (!v) return std::nullopt;
  std::vector<std::string> out;
  auto take = [&](const Json& s) {
    if (!s.is_string()) bad_request(std::string(key) + " must be a string or a list of strings", key);
    const auto& str = s.get_ref<const std::string&>();
    if (str.size() > max_bytes)
      bad_request(std::string(key) + " has a string longer than " + std::to_string(max_bytes) + " bytes", key);
    out.push_back(str);
  };
  if (v->is_array()) {
    if (v->size() > max_items)
      bad_request(std::string(key) + " has more than " + std::to_string(max_items) + " entries", key);
    for (const auto& s : *v) take(s);
  } else {
    take(*v);
  }
  return out;
}

std::optional<std::vector<int32_t>> JsonFields::int_list(const char* key, size_t max_items, int64_t lo,
                                                         int64_t hi) const {
  const Json* v = raw(key);
  if (!v) return std::nullopt;
  if (!v->is_array()) bad_request(std::string(key) + " must be a list of integers", key);
  if (v->size() > max_items)
    bad_request(std::string(key) + " has more than " + std::to_string(max_items) + " entries", key);
  std::vector<int32_t> out;
  out.reserve(v->size());
  for (const auto& e : *v) {
    const auto i = json_integer(e, lo, hi);
    if (!i)
      bad_request(std::string(key) + " must hold integers in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                      "], got " + e.dump(),
                  key);
    out.push_back(static_cast<int32_t>(*i));
  }
  return out;
}

}  // namespace inferdesk::server
