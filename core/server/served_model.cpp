#include "core/server/served_model.h"

#include <algorithm>
#include <chrono>

#include "core/chat/model_templates.h"
#include "core/util/error.h"

namespace inferdesk::server {

bool ServedModel::accepts(std::string_view name) const {
  return std::find(names.begin(), names.end(), name) != names.end();
}

const chat::ChatTemplate* ServedModel::chat_template(bool has_tools) const {
  if (has_tools)
    if (auto it = templates.find("tool_use"); it != templates.end()) return &it->second;
  if (auto it = templates.find("default"); it != templates.end()) return &it->second;
  return nullptr;
}

namespace {

GenerationDefaults defaults_of(const LoadedModel& m) {
  GenerationDefaults d;
  if (!m.folder) return d;
  const GenerationConfig& g = m.folder->generation_config();
  if (g.temperature >= 0) d.temperature = static_cast<float>(g.temperature);
  if (g.top_p >= 0) d.top_p = static_cast<float>(g.top_p);
  if (g.min_p >= 0) d.min_p = static_cast<float>(g.min_p);
  if (g.repetition_penalty >= 0) d.repetition_penalty = static_cast<float>(g.repetition_penalty);
  if (g.top_k >= 0) d.top_k = static_cast<int32_t>(std::min<int64_t>(g.top_k, INT32_MAX));
  if (g.max_new_tokens > 0) d.max_tokens = static_cast<int32_t>(std::min<int64_t>(g.max_new_tokens, INT32_MAX));
  return d;
}

void load_templates(ServedModel& m, const std::filesystem::path& dir) {
  try {
    const chat::ModelChatTemplates found = chat::load_model_chat_templates(dir);
    m.bos_token = found.bos_token;
    m.eos_token = found.eos_token;
    for (const chat::NamedTemplate& t : found.templates) {
      try {
        m.templates.emplace(t.name, chat::ChatTemplate::parse(t.source, t.origin));
      } catch (const Error& e) {
        m.template_problem = e.what();
      }
    }
    if (!m.chat_template(false) && m.template_problem.empty())
      m.template_problem = "the model has no chat template named 'default'";
  } catch (const Error& e) {
    m.template_problem = e.what();
  }
}

}  // namespace

std::optional<Tokenizer> load_tokenizer(const std::filesystem::path& model_dir) {
  try {
    return Tokenizer::from_dir(model_dir);
  } catch (const Error&) {
    return std::nullopt;  // token-id prompts still work; text prompts are refused with a reason
  }
}

ServedModel make_served_model(const std::shared_ptr<Engine>& engine, const std::filesystem::path& model_dir,
                              std::vector<std::string> names, std::optional<Tokenizer> tokenizer) {
  if (!engine) throw Error(ErrorCode::InvalidArgument, "make_served_model: no engine");
  ServedModel m;
  m.engine = engine;
  m.max_model_len = engine->max_model_len();
  m.vocab_size = static_cast<int32_t>(engine->model_config().vocab_size);
  m.defaults = defaults_of(engine->model());
  m.root = model_dir.empty() ? engine->model().name : model_dir.string();
  m.created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                  .count();
  m.names = std::move(names);
  m.names.erase(std::remove(m.names.begin(), m.names.end(), std::string()), m.names.end());
  if (m.names.empty()) m.names.push_back(m.root);
  if (model_dir.empty()) {
    m.template_problem = "the model has dummy weights and no tokenizer";
    return m;
  }
  m.tokenizer = tokenizer ? std::move(tokenizer) : load_tokenizer(model_dir);
  load_templates(m, model_dir);
  return m;
}

}  // namespace inferdesk::server
