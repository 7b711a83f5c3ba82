// Finding a model's chat template(s) and special tokens in a Hugging Face model folder, the way
// transformers does: chat_template.jinja (which replaces any template in the config, plus named ones
// in additional_chat_templates/NAME.jinja), else tokenizer_config.json "chat_template" (a string, or a
// list of {"name", "template"}), else chat_template.json; bos_token / eos_token from
// tokenizer_config.json (strings or AddedToken objects), else special_tokens_map.json.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/chat/chat_template.h"

namespace inferdesk::chat {

struct NamedTemplate {
  std::string name;    // "default" for a model's only template
  std::string source;  // the Jinja text
  std::string origin;  // file it came from (+ "#name" for named ones), for messages
};

struct ModelChatTemplates {
  std::vector<NamedTemplate> templates;
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;

  const NamedTemplate* find(std::string_view name) const;
  // transformers' choice: `name` when given; otherwise "tool_use" when tools are passed and the model has
  // one, else "default". Throws Error(NotFound) naming the templates there are.
  const NamedTemplate& select(std::optional<std::string_view> name, bool has_tools) const;
  // Parses the selected template (TemplateError on syntax errors).
  ChatTemplate parse(std::optional<std::string_view> name, bool has_tools) const;
};

// The templates of one file: a .jinja file is one "default" template; a JSON file has a
// "chat_template" string or list of {name, template}. Errors: Io/NotFound, Format (file and field).
std::vector<NamedTemplate> read_chat_template_file(const std::filesystem::path& file);

// Reads the model folder. Error(NotFound) when it has no chat template anywhere.
ModelChatTemplates load_model_chat_templates(const std::filesystem::path& model_dir);

// Whether a folder has a chat template a chat can use: usable; absent (problem empty); or why the
// one it has cannot be used (a non-string chat_template, a template that does not parse). One
// answer for `info` and the model manager.
struct ChatTemplateStatus {
  bool usable = false;
  std::string problem;  // empty: usable or absent
};
ChatTemplateStatus chat_template_status(const std::filesystem::path& model_dir);

// "content" of an AddedToken object, or the string itself; nullopt for null / other shapes.
std::optional<std::string> special_token_content(const Json& value);

}  // namespace inferdesk::chat
