#include "core/chat/prompt_tokens.h"

#include <algorithm>

namespace inferdesk::chat {

namespace {
constexpr EncodeOptions kParseSpecial{false, false};
constexpr EncodeOptions kSpecialAsText{false, true};
}  // namespace

bool has_special_token_text(const Tokenizer& tok, std::string_view text) {
  return !text.empty() && tok.encode(text, kParseSpecial) != tok.encode(text, kSpecialAsText);
}

std::vector<int32_t> tokenize_with_plain_parts(const Tokenizer& tok, const std::string& rendered,
                                               const std::string& skeleton, const std::vector<PromptPart>& parts) {
  std::vector<std::pair<size_t, const PromptPart*>> spots;  // (position in skeleton, part)
  for (const PromptPart& p : parts) {
    const size_t at = skeleton.find(p.marker);
    if (at == std::string::npos) {
      if (p.text.empty()) continue;
      return {};  // the template dropped or transformed this content
    }
    if (skeleton.find(p.marker, at + 1) != std::string::npos) return {};
    spots.push_back({at, &p});
  }
  std::sort(spots.begin(), spots.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<int32_t> ids;
  std::string rebuilt;
  auto append = [&](const std::string& text, EncodeOptions how) {
    const std::vector<int32_t> part = tok.encode(text, how);
    ids.insert(ids.end(), part.begin(), part.end());
    rebuilt += text;
  };
  size_t pos = 0;
  for (const auto& [at, part] : spots) {
    append(skeleton.substr(pos, at - pos), kParseSpecial);
    append(part->text, kSpecialAsText);
    pos = at + part->marker.size();
  }
  append(skeleton.substr(pos), kParseSpecial);
  if (rebuilt != rendered) return {};
  return ids;
}

}  // namespace inferdesk::chat
