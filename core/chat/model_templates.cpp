#include "core/chat/model_templates.h"

#include <algorithm>

#include "core/chat/chat_template.h"
#include "core/util/regular_file.h"

namespace inferdesk::chat {

namespace fs = std::filesystem;

namespace {

constexpr uintmax_t kMaxFileBytes = uintmax_t{64} << 20;  // tokenizer_config.json can hold ~1 MB of added tokens

std::string read_file(const fs::path& file) {
  // Through RegularFile: a FIFO or a device named tokenizer_config.json is refused, not waited on.
  return read_regular_file(file, kMaxFileBytes);
}

Json read_json(const fs::path& file) { return parse_json_text(read_file(file), file.string()); }

std::vector<NamedTemplate> templates_from_field(const Json& field, const fs::path& file) {
  const std::string where = file.string() + ": \"chat_template\"";
  if (field.is_string()) return {NamedTemplate{"default", field.get<std::string>(), file.string()}};
  if (!field.is_array()) {
    throw Error(ErrorCode::Format, where + " must be a string or a list of {\"name\", \"template\"} objects");
  }
  std::vector<NamedTemplate> out;
  for (size_t i = 0; i < field.size(); ++i) {
    const Json& e = field[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!e.is_object() || !e.contains("name") || !e.contains("template") || !e["name"].is_string() ||
        !e["template"].is_string()) {
      throw Error(ErrorCode::Format, at + " must be an object with string fields \"name\" and \"template\"");
    }
    const std::string name = e["name"].get<std::string>();
    if (std::any_of(out.begin(), out.end(), [&](const NamedTemplate& t) { return t.name == name; })) {
      throw Error(ErrorCode::Format, at + ": duplicate template name '" + name + "'");
    }
    out.push_back(NamedTemplate{name, e["template"].get<std::string>(), file.string() + "#" + name});
  }
  return out;
}

void read_special_tokens(const Json& cfg, ModelChatTemplates& out) {
  if (!cfg.is_object()) return;
  if (!out.bos_token && cfg.contains("bos_token")) out.bos_token = special_token_content(cfg["bos_token"]);
  if (!out.eos_token && cfg.contains("eos_token")) out.eos_token = special_token_content(cfg["eos_token"]);
}

}  // namespace

std::optional<std::string> special_token_content(const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content") && value["content"].is_string()) {
    return value["content"].get<std::string>();
  }
  return std::nullopt;
}

std::vector<NamedTemplate> read_chat_template_file(const fs::path& file) {
  if (file.extension() == ".jinja" || file.extension() == ".jinja2") {
    return {NamedTemplate{"default", read_file(file), file.string()}};
  }
  const Json doc = read_json(file);
  if (!doc.is_object()) throw Error(ErrorCode::Format, file.string() + ": expected a JSON object");
  if (!doc.contains("chat_template") || doc["chat_template"].is_null()) {
    throw Error(ErrorCode::NotFound, file.string() + " has no \"chat_template\"");
  }
  return templates_from_field(doc["chat_template"], file);
}

ModelChatTemplates load_model_chat_templates(const fs::path& model_dir) {
  std::error_code ec;
  if (!fs::is_directory(model_dir, ec)) throw Error(ErrorCode::NotFound, model_dir.string() + " is not a folder");
  ModelChatTemplates out;
  const fs::path config = model_dir / "tokenizer_config.json";
  const fs::path jinja = model_dir / "chat_template.jinja";
  const fs::path legacy = model_dir / "chat_template.json";
  Json cfg;
  if (fs::exists(config, ec)) {
    cfg = read_json(config);
    if (!cfg.is_object()) throw Error(ErrorCode::Format, config.string() + ": expected a JSON object");
    read_special_tokens(cfg, out);
  }
  const fs::path special_map = model_dir / "special_tokens_map.json";
  if ((!out.bos_token || !out.eos_token) && fs::exists(special_map, ec))
    read_special_tokens(read_json(special_map), out);

  if (fs::exists(jinja, ec)) {
    out.templates = read_chat_template_file(jinja);
  } else if (cfg.is_object() && cfg.contains("chat_template") && !cfg["chat_template"].is_null()) {
    out.templates = templates_from_field(cfg["chat_template"], config);
  } else if (fs::exists(legacy, ec)) {
    out.templates = read_chat_template_file(legacy);
  }
  const fs::path extra_dir = model_dir / "additional_chat_templates";
  if (fs::is_directory(extra_dir, ec)) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(extra_dir, ec)) {
      if (entry.path().extension() == ".jinja") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      std::string name = f.stem().string();
      if (out.find(name)) continue;
      out.templates.push_back(NamedTemplate{name, read_chat_template_file(f)[0].source, f.string()});
    }
  }
  if (out.templates.empty()) {
    throw Error(ErrorCode::NotFound, model_dir.string() +
                                         " has no chat template (looked for chat_template.jinja, \"chat_template\" in "
                                         "tokenizer_config.json, and chat_template.json)");
  }
  return out;
}

const NamedTemplate* ModelChatTemplates::find(std::string_view name) const {
  for (const NamedTemplate& t : templates) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const NamedTemplate& ModelChatTemplates::select(std::optional<std::string_view> name, bool has_tools) const {
  auto available = [&] {
    std::string names;
    for (const NamedTemplate& t : templates) names += (names.empty() ? "'" : ", '") + t.name + "'";
    return names;
  };
  if (name) {
    if (const NamedTemplate* t = find(*name)) return *t;
    throw Error(ErrorCode::NotFound,
                "no chat template named '" + std::string(*name) + "' (the model has " + available() + ")");
  }
  if (has_tools) {
    if (const NamedTemplate* t = find("tool_use")) return *t;
  }
  if (const NamedTemplate* t = find("default")) return *t;
  throw Error(ErrorCode::NotFound, "the model has several chat templates (" + available() +
                                       ") and none is named 'default'; pick one by name");
}

ChatTemplate ModelChatTemplates::parse(std::optional<std::string_view> name, bool has_tools) const {
  const NamedTemplate& t = select(name, has_tools);
  return ChatTemplate::parse(t.source, t.origin);
}

ChatTemplateStatus chat_template_status(const std::filesystem::path& model_dir) {
  try {
    const ModelChatTemplates t = load_model_chat_templates(model_dir);
    for (const NamedTemplate& nt : t.templates) (void)ChatTemplate::parse(nt.source, nt.origin);
    return {!t.templates.empty(), ""};
  } catch (const Error& e) {
    if (e.code() == ErrorCode::NotFound) return {};
    return {false, e.what()};
  }
}

}  // namespace inferdesk::chat
