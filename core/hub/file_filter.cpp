#include "core/hub/file_filter.h"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>

namespace inferdesk::hub {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string_view file_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string allow_list_refusal(std::string_view path) {
  const std::string name = lower(file_name(path));
  for (const char* ext : {".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle"})
    if (ends_with(name, ext)) return "pickle weights are never downloaded (they can run code when loaded)";
  if (ends_with(name, ".safetensors") || ends_with(name, ".json") || ends_with(name, ".jinja")) return "";
  if (name == "tokenizer.model" || name == "readme.md" || name == "license" || name == "license.md" ||
      name == "license.txt" || name == "notice" || ends_with(name, ".tiktoken"))
    return "";
  // Tokenizer vocabularies and merges: vocab.txt, merges.txt, spiece/sentencepiece models.
  if (ends_with(name, ".txt") && (name.find("vocab") != std::string::npos || name.find("merges") != std::string::npos))
    return "";
  if (ends_with(name, ".model") &&
      (name.find("spiece") != std::string::npos || name.find("sentencepiece") != std::string::npos))
    return "";
  return "not a file InferDesk uses (safetensors, JSON, tokenizer, chat template, README, license)";
}

bool glob_match(std::string_view pattern, std::string_view path) {
  std::string p(pattern);
  if (!p.empty() && p.back() == '/') p += '*';
  const std::string s(path);
  return fnmatch(p.c_str(), s.c_str(), 0) == 0;
}

bool is_selected(const FileFilter& filter, std::string_view path) {
  if (!allow_list_refusal(path).empty()) return false;
  if (filter.include.empty()) return true;
  return std::any_of(filter.include.begin(), filter.include.end(),
                     [&](const std::string& g) { return glob_match(g, path); });
}

}  // namespace inferdesk::hub
