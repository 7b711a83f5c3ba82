// JsonFields: typed, range-checked reads of an untrusted JSON request object. A field that is
// absent or null reads as nullopt (OpenAI clients send null for "not set"); a field of the wrong
// type or out of range throws ApiError(400) naming it. Fields nobody reads are ignored, as vLLM
// ignores unknown fields.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/server/api_error.h"

namespace inferdesk::server {

class JsonFields {
 public:
  // Throws ApiError(400) unless `body` is an object. `body` must outlive this reader.
  explicit JsonFields(const Json& body);

  // Any JSON number (NaN cannot occur in JSON); [lo, hi] inclusive.
  std::optional<double> number(const char* key, double lo, double hi) const;
  // An integer (a float with no fractional part is accepted, as pydantic does); [lo, hi].
  std::optional<int64_t> integer(const char* key, int64_t lo, int64_t hi) const;
  // Any integer that fits in 64 bits, signed or unsigned (seeds).
  std::optional<uint64_t> seed(const char* key) const;
  std::optional<bool> boolean(const char* key) const;
  std::optional<std::string> string(const char* key, size_t max_bytes) const;
  // A string or a list of strings (OpenAI's `stop`), each at most max_bytes, at most max_items.
  std::optional<std::vector<std::string>> strings(const char* key, size_t max_items, size_t max_bytes) const;
  // A list of integers in [lo, hi], at most max_items.
  std::optional<std::vector<int32_t>> int_list(const char* key, size_t max_items, int64_t lo, int64_t hi) const;
  // The raw value (nullptr when absent or null).
  const Json* raw(const char* key) const;
  const Json* object(const char* key) const;  // must be an object when present

 private:
  const Json& body_;
};

// Integer value of a JSON number that is integral and within [lo, hi]; nullopt otherwise.
std::optional<int64_t> json_integer(const Json& v, int64_t lo, int64_t hi);

}  // namespace inferdesk::server
