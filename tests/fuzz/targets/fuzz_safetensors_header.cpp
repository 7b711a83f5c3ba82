// safetensors headers: parse_safetensors_header on fuzzed JSON, as SafetensorsFile::open calls it.
// Input: 8 bytes (little-endian) of data-section size, then the header JSON. The data pointer is
// null (the parser only checks offsets against the size), so sizes up to 2^64 - 1 are reachable.
#include <cstdint>
#include <cstring>
#include <string_view>

#include "core/io/safetensors.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  uint64_t data_size = 0;
  for (int i = 7; i >= 0; --i) data_size = (data_size << 8) | data[i];
  const std::string_view header(reinterpret_cast<const char*>(data) + 8, size - 8);
  inferdesk::fuzz::expect_typed_errors([&] {
    const auto parsed = inferdesk::parse_safetensors_header(header, nullptr, data_size, "fuzz.safetensors");
    // Accepted tensors must tile the data section: the loader relies on it.
    uint64_t total = 0;
    for (const auto& t : parsed.tensors) total += static_cast<uint64_t>(t.nbytes);
    if (total != data_size) __builtin_trap();
  });
  return 0;
}
