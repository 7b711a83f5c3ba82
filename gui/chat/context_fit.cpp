#include "gui/chat/context_fit.h"

#include <cstdint>

namespace inferdesk::gui {

namespace {

// Where each droppable turn starts: indices in [first, last_user) where a user message begins
// a turn (the first droppable message always starts one).
std::vector<size_t> turn_starts(const std::vector<PromptMessage>& msgs, size_t first, size_t last_user) {
  std::vector<size_t> starts;
  for (size_t i = first; i < last_user; ++i)
    if (i == first || msgs[i].role == "user") starts.push_back(i);
  return starts;
}

std::vector<PromptMessage> without_range(const std::vector<PromptMessage>& msgs, size_t from, size_t to) {
  std::vector<PromptMessage> out(msgs.begin(), msgs.begin() + static_cast<std::ptrdiff_t>(from));
  out.insert(out.end(), msgs.begin() + static_cast<std::ptrdiff_t>(to), msgs.end());
  return out;
}

QString plural(int n, const char* one, const char* many) { return QString("%1 %2").arg(n).arg(n == 1 ? one : many); }

}  // namespace

QString excerpt(const QString& text, int maxChars) {
  QString s = text.simplified();
  if (s.size() <= maxChars) return s;
  s.truncate(maxChars);
  const int space = s.lastIndexOf(' ');
  if (space > maxChars / 2) s.truncate(space);
  return s + QChar(0x2026);
}

ContextFit fitToContext(const std::vector<PromptMessage>& conversation, int contextLength, int maxTokens,
                        const RenderFunction& render) {
  ContextFit fit;
  if (conversation.empty()) {
    fit.error = "there is no message to reply to";
    return fit;
  }
  if (contextLength > 0 && maxTokens >= contextLength) {
    fit.error = QString("Max tokens (%1) leaves no room for the prompt in the model's context of %2 tokens: "
                        "lower Max tokens, or load the model with a longer context.")
                    .arg(maxTokens)
                    .arg(contextLength);
    return fit;
  }
  const size_t first = !conversation.empty() && conversation.front().role == "system" ? 1 : 0;
  size_t last_user = conversation.size() - 1;
  while (last_user > first && conversation[last_user].role != "user") --last_user;
  const std::vector<size_t> starts = turn_starts(conversation, first, last_user);
  const int budget = contextLength > 0 ? contextLength - maxTokens : INT32_MAX;

  // Renders with the oldest `k` turns left out; false (with fit.error) when rendering failed.
  auto attempt = [&](size_t k, RenderedPrompt& out) {
    const size_t to = k < starts.size() ? starts[k] : last_user;
    const auto msgs = k == 0 ? conversation : without_range(conversation, first, to);
    out = render(msgs);
    if (!out.ok()) fit.error = "could not render the prompt: " + out.error;
    return out.ok();
  };
  auto fits = [&](const RenderedPrompt& r) { return static_cast<int64_t>(r.ids.size()) <= budget; };

  RenderedPrompt best;
  if (!attempt(0, best)) return fit;
  size_t dropped = 0;
  if (!fits(best)) {
    RenderedPrompt shortest;
    if (!attempt(starts.size(), shortest)) return fit;
    if (!fits(shortest)) {
      fit.error = QString("The last message does not fit: the prompt needs %1 tokens and the reply %2 "
                          "(Max tokens), but the model's context holds %3. Shorten the message or "
                          "system prompt, lower Max tokens, or load the model with a longer context.")
                      .arg(shortest.ids.size())
                      .arg(maxTokens)
                      .arg(contextLength);
      return fit;
    }
    // The smallest number of dropped turns that fits (prompt length shrinks as turns go).
    size_t lo = 1, hi = starts.size();
    best = shortest;
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      RenderedPrompt r;
      if (!attempt(mid, r)) return fit;
      if (fits(r)) {
        hi = mid;
        best = std::move(r);
      } else {
        lo = mid + 1;
      }
    }
    dropped = hi;  // best is the rendering with `hi` turns left out
  }
  const size_t to = dropped == 0 ? first : (dropped < starts.size() ? starts[dropped] : last_user);
  fit.messages = dropped == 0 ? conversation : without_range(conversation, first, to);
  fit.droppedTurns = static_cast<int>(dropped);
  fit.droppedMessages = static_cast<int>(to - first);
  fit.promptTokens = static_cast<int>(best.ids.size());
  fit.prompt = std::move(best);
  fit.ok = true;
  if (dropped > 0) {
    const QString turns = fit.droppedTurns == 1 ? QString("turn") : plural(fit.droppedTurns, "turn", "turns");
    fit.notice = QString("This conversation is longer than the model's context (%1 tokens, %2 kept for the reply): "
                         "the oldest %3 (%4, from \u201c%5\u201d) %6 left out of the prompt.")
                     .arg(contextLength)
                     .arg(maxTokens)
                     .arg(turns, plural(fit.droppedMessages, "message", "messages"),
                          excerpt(conversation[first].content), fit.droppedTurns == 1 ? "was" : "were");
  }
  return fit;
}

}  // namespace inferdesk::gui
