// Decoders (tokenizer.json "decoder"): turn token strings back into text, with HF's semantics
// (ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace, Sequence). Two forms share one
// description: a batch form (HF's decode_chain over all tokens, then join) and a streaming form
// used by IncrementalDecoder whose output, concatenated, equals the batch result.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace inferdesk::tok {

class DecoderStream;

class Decoder {
 public:
  virtual ~Decoder() = default;
  // HF decode_chain: tokens in, tokens out.
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
  // Appends this stage's streaming form to `stream`; false when it has none.
  virtual bool add_stream_stage(DecoderStream& stream) const = 0;
};

std::unique_ptr<Decoder> make_decoder(const nlohmann::json& j, const std::string& where);
// The decoder transformers' LlamaTokenizer defines: Replace("▁", " "), ByteFallback, Fuse, and
// Strip(" ", 1, 0) when add_prefix_space.
std::unique_ptr<Decoder> make_llama_decoder(bool add_prefix_space);
std::unique_ptr<Decoder> make_byte_level_decoder();

// Batch decode: decoder chain then join (no decoder: tokens joined with spaces, as HF does).
std::string run_decoder(const Decoder* decoder, std::vector<std::string> tokens);

// Streaming decoder built from a Decoder. push() takes one token string and returns the text that
// can be shown now; finish() returns the rest. Not thread-safe (one per stream).
class DecoderStream {
 public:
  // Builds the stream for `decoder` (may be null). supported() is false when some stage has no
  // streaming form; the caller then decodes in batch at the end.
  explicit DecoderStream(const Decoder* decoder);
  ~DecoderStream();
  DecoderStream(const DecoderStream&) = delete;
  DecoderStream& operator=(const DecoderStream&) = delete;

  bool supported() const { return supported_; }
  void push(std::string token, std::string& out);
  void finish(std::string& out);

  // Stage plumbing (used by the decoder implementations).
  class Stage;
  void add(std::unique_ptr<Stage> stage);
  bool joined() const { return joined_; }
  void set_joined() { joined_ = true; }

 private:
  std::vector<std::unique_ptr<Stage>> stages_;
  bool supported_ = true;
  bool joined_ = false;  // a stage already turned the tokens into one text
  bool have_decoder_ = false;
  bool first_token_ = true;
};

}  // namespace inferdesk::tok
