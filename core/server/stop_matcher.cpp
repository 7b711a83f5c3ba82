#include "core/server/stop_matcher.h"

#include <algorithm>

namespace inferdesk::server {

StopMatcher::StopMatcher(std::vector<std::string> stops, bool include_stop) : include_stop_(include_stop) {
  for (auto& s : stops) {
    if (s.empty()) continue;
    Automaton a;
    a.pattern = std::move(s);
    a.failure.assign(a.pattern.size(), 0);
    for (size_t i = 1, k = 0; i < a.pattern.size(); ++i) {
      while (k > 0 && a.pattern[i] != a.pattern[k]) k = a.failure[k - 1];
      if (a.pattern[i] == a.pattern[k]) ++k;
      a.failure[i] = static_cast<uint32_t>(k);
    }
    stops_.push_back(std::move(a));
  }
}

StopMatcher::Piece StopMatcher::push(std::string_view text) {
  Piece out;
  if (stopped_) return out;
  if (stops_.empty()) {
    out.text.assign(text);
    return out;
  }
  const size_t base = held_.size();
  held_.append(text);
  for (size_t j = base; j < held_.size(); ++j) {
    const char c = held_[j];
    const Automaton* hit = nullptr;
    for (Automaton& a : stops_) {
      uint32_t k = a.state;
      while (k > 0 && a.pattern[k] != c) k = a.failure[k - 1];
      if (a.pattern[k] == c) ++k;
      a.state = k;
      if (k == a.pattern.size() && (!hit || a.pattern.size() > hit->pattern.size())) hit = &a;
    }
    if (hit) {
      stopped_ = true;
      out.matched = hit->pattern;
      const size_t start = j + 1 - hit->pattern.size();
      out.text = held_.substr(0, include_stop_ ? j + 1 : start);
      held_.clear();
      return out;
    }
  }
  // Only the longest suffix that is a prefix of some stop string can still become a match.
  size_t keep = 0;
  for (const Automaton& a : stops_) keep = std::max<size_t>(keep, a.state);
  out.text = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopMatcher::finish() {
  std::string rest;
  rest.swap(held_);
  if (stopped_) rest.clear();
  return rest;
}

}  // namespace inferdesk::server
