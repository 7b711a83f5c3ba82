// encode / decode of arbitrary text with real tokenizers (loaded once from the shared data's
// tokenizers/ at start): encode with the input's options, decode the ids, stream them through the
// IncrementalDecoder (whose concatenated output must equal decode(), as tokenizer.h promises), and
// decode the input's bytes read as token ids (out-of-range ids must be a typed error).
// Input: byte 0 picks the tokenizer, byte 1 the options, the rest is the text.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

// Byte-level BPE (GPT-2, Llama 3, Qwen2.5 from vocab.json + merges.txt) and SentencePiece-style
// BPE with byte fallback (Llama 2, Mistral v0.3, Phi-3).
const char* const kTokenizers[] = {"GPT-2",
                                   "Llama-2-7b-chat-hf",
                                   "Meta-Llama-3-8B-Instruct",
                                   "Mistral-7B-Instruct-v0.3",
                                   "Phi-3-mini-4k-instruct",
                                   "Qwen2.5-Instruct"};

std::vector<inferdesk::Tokenizer>& tokenizers() {
  static std::vector<inferdesk::Tokenizer> loaded;
  return loaded;
}

void check_round(const inferdesk::Tokenizer& tok, std::string_view text, uint8_t flags) {
  using namespace inferdesk;
  const EncodeOptions options{(flags & 1) != 0, (flags & 2) != 0};
  const bool skip_special = (flags & 4) != 0;
  const std::vector<int32_t> ids = tok.encode(text, options);
  const std::string whole = tok.decode(ids, skip_special);
  IncrementalDecoder stream(tok, skip_special);
  std::string streamed;
  for (int32_t id : ids) streamed += stream.push(id);
  streamed += stream.finish();
  if (streamed != whole) {
    std::fprintf(stderr, "IncrementalDecoder output differs from decode(): %zu vs %zu bytes\n", streamed.size(),
                 whole.size());
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const auto root = inferdesk::fuzz::shared_dir() / "tokenizers";
  for (const char* name : kTokenizers) {
    try {
      tokenizers().push_back(inferdesk::Tokenizer::from_dir(root / name));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fuzz_tokenizer_encode: skipping %s: %s\n", name, e.what());
    }
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferdesk;
  if (size < 2 || tokenizers().empty()) return 0;
  const Tokenizer& tok = tokenizers()[data[0] % tokenizers().size()];
  const uint8_t flags = data[1];
  const std::string_view text(reinterpret_cast<const char*>(data) + 2, size - 2);
  fuzz::expect_typed_errors([&] { check_round(tok, text, flags); });
  // The text's bytes as ids, near the vocabulary's end so that both valid and invalid ids occur.
  std::vector<int32_t> ids;
  for (size_t i = 0; i + 4 <= text.size() && ids.size() < 256; i += 4) {
    int32_t v = 0;
    std::memcpy(&v, text.data() + i, 4);
    ids.push_back((flags & 8) ? v : v % (tok.max_token_id() + 2));
  }
  fuzz::expect_typed_errors([&] { (void)tok.decode(ids, (flags & 4) != 0); });
  fuzz::expect_typed_errors([&] {
    IncrementalDecoder stream(tok, (flags & 4) != 0);
    for (int32_t id : ids) (void)stream.push(id);
    (void)stream.finish();
  });
  return 0;
}
