#include "core/remote/sse.h"

namespace inferdesk::remote {

void SseParser::feed(std::string_view bytes) {
  pending_.append(bytes);
  size_t start = 0;
  for (size_t nl; (nl = pending_.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string_view l(pending_.data() + start, nl - start);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    line(l);
  }
  pending_.erase(0, start);
}

void SseParser::finish() {
  if (pending_.empty()) return;
  const std::string last = std::move(pending_);
  pending_.clear();
  line(last);
}

void SseParser::line(std::string_view l) {
  if (l.rfind("data:", 0) != 0) return;  // blank separators, ": comments", event:, id:
  l.remove_prefix(5);
  if (!l.empty() && l.front() == ' ') l.remove_prefix(1);
  on_data_(l);
}

}  // namespace inferdesk::remote
