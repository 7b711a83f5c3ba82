// Which files of a repository InferDesk downloads. The allow-list keeps what InferDesk (and
// transformers) need to run a model from safetensors: weights, JSON configs, tokenizer files, chat
// templates, README and license. Pickle formats (.bin, .pt, .pth, .ckpt, .pkl) can execute code when
// loaded and are never downloaded, whatever the --include globs say; the globs only narrow the
// selection further.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace inferdesk::hub {

struct FileFilter {
  // Globs on the repository path as huggingface_hub's allow_patterns read them (Python's fnmatch:
  // '*' also crosses '/', so "*.json" matches "sub/x.json"; "dir/" means "dir/*"). Empty: every
  // file the allow-list admits.
  std::vector<std::string> include;
};

// "" when `path` is admitted by the allow-list, else the reason it is not.
std::string allow_list_refusal(std::string_view path);
// Glob match of one pattern (`*`, `?`, `[...]`).
bool glob_match(std::string_view pattern, std::string_view path);
// Allowed and matching at least one include glob (or no globs).
bool is_selected(const FileFilter& filter, std::string_view path);

}  // namespace inferdesk::hub
