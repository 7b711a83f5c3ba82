// Tokenizer loading: Tokenizer::from_json on fuzzed tokenizer.json, tokenizer_config.json and
// config.json (all in memory), then a short encode / decode round through the accepted pipeline
// and its incremental decoder. Input: the multi-file format of fuzz_support.h; text before the
// first "%%FILE" line is tokenizer.json, further parts "tokenizer_config.json" and "config.json".
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

std::string_view part_or_empty(const std::vector<inferdesk::fuzz::Part>& parts, std::string_view name) {
  const auto* p = inferdesk::fuzz::find_part(parts, name);
  return p ? p->content : std::string_view();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferdesk;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto parts = fuzz::split_parts(input, "tokenizer.json", 3);
  fuzz::expect_typed_errors([&] {
    const Tokenizer tok = Tokenizer::from_json(parts.front().content, part_or_empty(parts, "tokenizer_config.json"),
                                               part_or_empty(parts, "config.json"), "fuzz");
    (void)tok.vocab_size();
    (void)tok.bos_id();
    (void)tok.eos_id();
    (void)tok.pad_id();
    for (std::string_view text : {"Hello world, 123!", " <s>\n\t\xC3\xA9\xF0\x9F\x98\x80", ""}) {
      const std::vector<int32_t> ids = tok.encode(text, EncodeOptions{true, false});
      (void)tok.decode(ids, false);
      IncrementalDecoder stream(tok, true);
      for (int32_t id : ids) (void)stream.push(id);
      (void)stream.finish();
    }
    for (int32_t id : {0, 1, tok.max_token_id(), tok.max_token_id() + 1, -1}) {
      (void)tok.id_to_token(id);
      (void)tok.is_special(id);
    }
  });
  return 0;
}
