#include "core/tokenizer/tokenizer.h"

#include "core/tokenizer/tokenizer_impl.h"
#include "core/tokenizer/utf8.h"
#include "core/util/error.h"

namespace inferdesk {

using tok::TokenizerImpl;

const std::string* TokenizerImpl::token_for_decode(int32_t id, bool skip_special) const {
  if (const tok::AddedToken* t = added.find_id(id)) return skip_special && t->special ? nullptr : &t->content;
  const std::string* s = model->id_to_token(id);
  if (!s)
    throw Error(ErrorCode::Tokenizer, "decode: token id " + std::to_string(id) + " is not in the vocabulary of " +
                                          name + " (valid ids: 0.." + std::to_string(max_id) + ")");
  if (skip_special) {
    if (const tok::AddedToken* t = added.find_content(*s); t && t->special) return nullptr;
  }
  return s;
}

Tokenizer::Tokenizer(std::shared_ptr<const TokenizerImpl> impl) : impl_(std::move(impl)) {}

Tokenizer Tokenizer::from_dir(const std::filesystem::path& dir) { return Tokenizer(tok::load_tokenizer_dir(dir)); }

Tokenizer Tokenizer::from_json(std::string_view tokenizer_json, std::string_view tokenizer_config_json,
                               std::string_view config_json, const std::string& name) {
  return Tokenizer(tok::load_tokenizer_json(tokenizer_json, tokenizer_config_json, config_json, name));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  EncodeOptions o;
  o.add_special_tokens = add_special_tokens;
  return encode(text, o);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  const TokenizerImpl& t = *impl_;
  std::string repaired;
  if (!tok::is_valid_utf8(text)) {
    repaired = tok::utf8_lossy(text);
    text = repaired;
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 8);
  std::vector<tok::Segment> segments;
  std::vector<std::string> storage;
  t.added.extract_and_normalize(text, t.normalizer.get(), options.split_special_tokens, segments, storage);
  tok::Arena arena;
  std::vector<tok::Piece> pieces;
  for (const auto& seg : segments) {
    if (seg.token) {
      ids.push_back(*seg.token);
      continue;
    }
    pieces.clear();
    pieces.push_back({seg.text, seg.at_origin});
    if (t.pre_tokenizer) t.pre_tokenizer->apply(pieces, arena);
    for (const auto& p : pieces) t.model->encode(p.text, t.model_reads_raw_bytes, ids);
  }
  if (options.add_special_tokens && t.post_processor) t.post_processor->process(ids);
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (const std::string* s = impl_->token_for_decode(id, skip_special_tokens)) tokens.push_back(*s);
  }
  return tok::run_decoder(impl_->decoder.get(), std::move(tokens));
}

size_t Tokenizer::vocab_size() const { return impl_->vocab_size; }
int32_t Tokenizer::max_token_id() const { return impl_->max_id; }

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (const tok::AddedToken* t = impl_->added.find_content(token)) return t->id;
  return impl_->model->token_to_id(token);
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  if (const tok::AddedToken* t = impl_->added.find_id(id)) return t->content;
  if (const std::string* s = impl_->model->id_to_token(id)) return *s;
  return std::nullopt;
}

bool Tokenizer::is_special(int32_t id) const {
  const tok::AddedToken* t = impl_->added.find_id(id);
  return t && t->special;
}

std::optional<std::string> Tokenizer::bos_token() const { return impl_->bos.text; }
std::optional<std::string> Tokenizer::eos_token() const { return impl_->eos.text; }
std::optional<std::string> Tokenizer::unk_token() const { return impl_->unk.text; }
std::optional<std::string> Tokenizer::pad_token() const { return impl_->pad.text; }
std::optional<int32_t> Tokenizer::bos_id() const { return impl_->bos.id; }
std::optional<int32_t> Tokenizer::eos_id() const { return impl_->eos.id; }
std::optional<int32_t> Tokenizer::pad_id() const { return impl_->pad.id; }
const std::string& Tokenizer::hf_class() const { return impl_->hf_class; }

IncrementalDecoder::IncrementalDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : impl_(tokenizer.impl_),
      skip_special_(skip_special_tokens),
      stream_(std::make_unique<tok::DecoderStream>(impl_->decoder.get())) {}

IncrementalDecoder::~IncrementalDecoder() = default;
IncrementalDecoder::IncrementalDecoder(IncrementalDecoder&&) noexcept = default;
IncrementalDecoder& IncrementalDecoder::operator=(IncrementalDecoder&&) noexcept = default;

std::string IncrementalDecoder::push(int32_t id) {
  if (finished_) throw Error(ErrorCode::InvalidArgument, "IncrementalDecoder: push() after finish()");
  const std::string* s = impl_->token_for_decode(id, skip_special_);
  std::string out;
  if (!s) return out;
  if (!stream_->supported()) {
    held_ids_.push_back(id);
    return out;
  }
  stream_->push(*s, out);
  return out;
}

std::string IncrementalDecoder::finish() {
  std::string out;
  if (finished_) return out;
  finished_ = true;
  if (!stream_->supported()) return Tokenizer(impl_).decode(held_ids_, false);
  stream_->finish(out);
  return out;
}

}  // namespace inferdesk
