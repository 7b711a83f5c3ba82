// Tokenizer: Hugging Face-compatible BPE tokenizers (byte-level BPE as in GPT-2 / Llama 3 / Qwen2,
// and SentencePiece-style BPE with byte fallback as in Llama 2 / Mistral / Phi-3), loaded from a
// model folder and producing exactly the ids that `transformers` AutoTokenizer produces.
//
//   auto tok = inferdesk::Tokenizer::from_dir("/models/Llama-3-8B-Instruct");
//   std::vector<int32_t> ids = tok.encode("Hello world", /*add_special_tokens=*/true);
//   std::string text = tok.decode(ids, /*skip_special_tokens=*/false);
//
// Semantics (see docs/TOKENIZER.md for the details and the transformers rules we follow):
// - encode(text, false) == HF tok.encode(text, add_special_tokens=False);
//   encode(text, true) == HF tok(text)["input_ids"]. Special-token strings in the text (e.g.
//   "<|im_start|>") become their control ids, as in HF; EncodeOptions::split_special_tokens = true
//   encodes them as plain text instead (use it for untrusted user text).
// - Invalid UTF-8 in the input is replaced (U+FFFD per maximal invalid sequence), never an error.
// - decode == HF tok.decode(ids, skip_special_tokens=...); an id that is no token is an Error.
// All const methods are thread-safe; a Tokenizer is cheap to copy (shared, immutable state).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace inferdesk {

namespace tok {
struct TokenizerImpl;
class DecoderStream;
}  // namespace tok

struct EncodeOptions {
  bool add_special_tokens = false;    // BOS/EOS etc. from the tokenizer's post-processor
  bool split_special_tokens = false;  // true: special-token strings in the text stay plain text
};

class Tokenizer {
 public:
  // Loads DIR/tokenizer.json (+ tokenizer_config.json, config.json when present), or else
  // DIR/vocab.json + DIR/merges.txt (+ tokenizer_config.json). Throws inferdesk::Error:
  // NotFound (no tokenizer files), Io, Tokenizer (malformed file: names file, field and reason),
  // Unsupported (a model type or pipeline stage this implementation does not have).
  static Tokenizer from_dir(const std::filesystem::path& dir);

  // Builds a tokenizer from file contents (tokenizer.json text, tokenizer_config.json text or
  // empty, config.json text or empty); `name` is used in error messages. For tests and tools.
  static Tokenizer from_json(std::string_view tokenizer_json, std::string_view tokenizer_config_json,
                             std::string_view config_json, const std::string& name);

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const;
  std::vector<int32_t> encode(std::string_view text, const EncodeOptions& options) const;
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const;

  // Number of distinct tokens including added ones (HF len(tokenizer)).
  size_t vocab_size() const;
  // Largest valid token id (embedding tables need max_token_id() + 1 rows at least).
  int32_t max_token_id() const;
  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The token string of an id (added tokens by content, model tokens in their vocab form, e.g.
  // "Ġthe" or "▁the"); nullopt when the id is no token.
  std::optional<std::string> id_to_token(int32_t id) const;
  bool is_special(int32_t id) const;  // an added token marked special

  // Special tokens from tokenizer_config.json (strings or AddedToken objects) or the defaults of
  // the tokenizer class; nullopt when the model has none.
  std::optional<std::string> bos_token() const;
  std::optional<std::string> eos_token() const;
  std::optional<std::string> unk_token() const;
  std::optional<std::string> pad_token() const;
  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> eos_id() const;
  std::optional<int32_t> pad_id() const;

  // The transformers tokenizer class whose behaviour this instance reproduces
  // ("TokenizersBackend", "LlamaTokenizer", "Qwen2Tokenizer", "GPT2Tokenizer").
  const std::string& hf_class() const;

 private:
  friend class IncrementalDecoder;
  explicit Tokenizer(std::shared_ptr<const tok::TokenizerImpl> impl);
  std::shared_ptr<const tok::TokenizerImpl> impl_;
};

// Streaming detokenization: push ids one by one and show the returned text. Deltas never contain
// a broken UTF-8 sequence or a raw ▁/Ġ marker, and the concatenation of all deltas plus finish()
// equals tokenizer.decode(all ids, skip_special_tokens). Text that may still change (an
// incomplete UTF-8 sequence, a run of byte-fallback tokens, a space a Strip decoder may remove) is
// held back until it is settled. One instance per stream; not thread-safe.
class IncrementalDecoder {
 public:
  IncrementalDecoder(const Tokenizer& tokenizer, bool skip_special_tokens);
  ~IncrementalDecoder();
  IncrementalDecoder(IncrementalDecoder&&) noexcept;
  IncrementalDecoder& operator=(IncrementalDecoder&&) noexcept;

  // Throws inferdesk::Error(Tokenizer) for an id that is no token (the stream is unchanged).
  std::string push(int32_t id);
  std::string finish();

 private:
  std::shared_ptr<const tok::TokenizerImpl> impl_;
  bool skip_special_;
  std::unique_ptr<tok::DecoderStream> stream_;
  std::vector<int32_t> held_ids_;  // only when the decoder has no streaming form
  bool finished_ = false;
};

// EngineOptions::sample_vocab for a model of `model_vocab` ids read with `tok`: the tokenizer's
// size when the model's vocabulary is padded beyond it (common in real checkpoints: such ids
// cannot be decoded, so they must never be sampled), else 0 (every id).
inline int32_t sample_vocab_for(const Tokenizer& tok, int64_t model_vocab) {
  const int64_t n = static_cast<int64_t>(tok.max_token_id()) + 1;
  return n < model_vocab ? static_cast<int32_t>(n) : 0;
}

}  // namespace inferdesk
