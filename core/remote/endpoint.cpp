#include "core/remote/endpoint.h"

namespace inferdesk::remote {

const char* to_string(ApiKind kind) { return kind == ApiKind::Completions ? "completions" : "chat"; }

ApiKind parse_api_kind(std::string_view text) { return text == "completions" ? ApiKind::Completions : ApiKind::Chat; }

std::string normalized_base_url(std::string_view url) {
  std::string s(url);
  while (!s.empty() && (s.back() == '/' || s.back() == ' ')) s.pop_back();
  if (s.size() >= 3 && s.compare(s.size() - 3, 3, "/v1") == 0) s.resize(s.size() - 3);
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace inferdesk::remote
