#include "core/server/generation.h"

#include <algorithm>

#include "core/util/error.h"

namespace inferdesk::server {

Generation::Generation(const GenerationRequest& request, const Tokenizer* tokenizer)
    : request_(request), tokenizer_(tokenizer) {
  choices_.resize(static_cast<size_t>(request.num_choices()));
  for (size_t i = 0; i < choices_.size(); ++i) {
    Choice& c = choices_[i];
    if (tokenizer_) c.decoder.emplace(*tokenizer_, request.skip_special_tokens);
    c.matcher = StopMatcher(request.stop, request.include_stop_str);
    if (request.echo) c.offset = static_cast<int64_t>(request.prompt_of(static_cast<int64_t>(i)).text.size());
  }
  for (const PromptInput& p : request.prompts) prompt_tokens_ += static_cast<int64_t>(p.ids.size());
}

std::string Generation::decode(Choice& c, int32_t id) {
  if (!c.decoder) return {};
  try {
    return c.decoder->push(id);
  } catch (const Error&) {
    return {};  // an id the tokenizer does not know (padded vocabulary rows): no text
  }
}

void Generation::count(Choice& c, const GeneratedToken& t, Update& u) {
  OutputToken o;
  o.token = t;
  if (request_.logprobs && tokenizer_) {
    try {
      o.text = tokenizer_->decode(std::span<const int32_t>(&t.id, 1), false);
    } catch (const Error&) {
      o.text.clear();
    }
  }
  o.text_offset = c.offset;
  c.offset += static_cast<int64_t>(o.text.size());
  ++completion_tokens_;
  u.delta.tokens.push_back(o);
  c.out.tokens.push_back(std::move(o));
}

void Generation::finish(Choice& c, const StreamEvent& ev, Update& u) {
  if (c.decoder) {
    StopMatcher::Piece p = c.matcher.push(c.decoder->finish());
    u.delta.text += p.text;
    if (p.matched) {
      c.out.finish_reason = "stop";
      c.out.stop_reason = *p.matched;
    }
  }
  if (c.out.finish_reason.empty()) {
    u.delta.text += c.matcher.finish();
    switch (ev.reason) {
      case FinishReason::Stop: {
        c.out.finish_reason = "stop";
        const auto& stops = request_.params.stop_token_ids;
        const int32_t last = c.out.tokens.empty() ? -1 : c.out.tokens.back().token.id;
        // vLLM reports the stop token id that ended it, and null for EOS.
        if (std::find(stops.begin(), stops.end(), last) != stops.end()) c.out.stop_reason = last;
        break;
      }
      case FinishReason::Length: c.out.finish_reason = "length"; break;
      case FinishReason::Error:
        c.out.finish_reason = "abort";
        u.error = ev.error.empty() ? "the engine failed the request" : ev.error;
        break;
      default:
        c.out.finish_reason = "abort";
        u.cancelled = true;
        break;
    }
  }
  c.out.done = true;
  ++finished_;
}

Generation::Update Generation::apply(int32_t index, const StreamEvent& ev) {
  Update u;
  u.delta.index = index;
  Choice& c = choices_.at(static_cast<size_t>(index));
  if (c.out.done) return u;  // tokens after a stop string, and the final event of its cancel
  for (size_t i = 0; i < ev.tokens.size() && !c.out.done; ++i) {
    const GeneratedToken& t = ev.tokens[i];
    count(c, t, u);
    // A stop token or EOS ends the text before it (vLLM detokenizes it only when asked to
    // include the stop string in the output).
    const bool stop_token = ev.finished && i + 1 == ev.tokens.size() && ev.reason == FinishReason::Stop &&
                            !request_.include_stop_str;
    if (stop_token) continue;
    StopMatcher::Piece p = c.matcher.push(decode(c, t.id));
    u.delta.text += p.text;
    if (p.matched) {
      c.out.finish_reason = "stop";
      c.out.stop_reason = *p.matched;
      c.out.done = true;
      ++finished_;
      u.cancel_engine = !ev.finished;
    }
  }
  if (!c.out.done && ev.finished) finish(c, ev, u);
  if (c.out.done) {
    u.delta.finish_reason = c.out.finish_reason;
    u.delta.stop_reason = c.out.stop_reason;
  }
  c.out.text += u.delta.text;
  return u;
}

}  // namespace inferdesk::server
