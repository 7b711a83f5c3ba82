// ServedModel: what the server needs to know about the model it serves, gathered once at start:
// the engine (held weakly: the desktop app may unload it while the server runs; requests then get
// 503), the tokenizer and parsed chat templates (absent for dummy weights: only token-id prompts
// work then), the generation_config.json sampling defaults and the limits. Immutable once built,
// so every server thread reads it without locks.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/chat/chat_template.h"
#include "core/engine/engine.h"
#include "core/tokenizer/tokenizer.h"

namespace inferdesk::server {

// Defaults a request's unset sampling fields take (vLLM's --generation-config auto).
struct GenerationDefaults {
  std::optional<float> temperature, top_p, min_p, repetition_penalty;
  std::optional<int32_t> top_k, max_tokens;
};

struct ServedModel {
  std::vector<std::string> names;  // served model names (aliases); names[0] is reported
  std::weak_ptr<Engine> engine;
  std::optional<Tokenizer> tokenizer;
  std::map<std::string, chat::ChatTemplate, std::less<>> templates;  // by name, parsed
  std::string template_problem;                     // why there is no usable template ("" when there is)
  std::optional<std::string> bos_token, eos_token;  // the template's bos_token / eos_token
  GenerationDefaults defaults;
  int32_t max_model_len = 0;
  int32_t vocab_size = 0;
  int64_t created = 0;  // unix seconds when it was loaded
  std::string root;     // the folder (or shape) it came from

  bool accepts(std::string_view name) const;
  const std::string& name() const { return names.front(); }
  // transformers' choice: "tool_use" when tools are passed and the model has one, else
  // "default"; null when the model has no usable template.
  const chat::ChatTemplate* chat_template(bool has_tools) const;
};

// The tokenizer of a model folder, or none when it has none or it does not load.
std::optional<Tokenizer> load_tokenizer(const std::filesystem::path& model_dir);

// Builds the ServedModel of a running engine. model_dir: the Hugging Face folder the engine was
// loaded from, whose tokenizer and chat templates are read (empty for dummy weights). names: the
// served model names; empty: model_dir as given, or the dummy shape's name. A tokenizer or
// template that is missing or fails to load leaves that part out (the reason is kept), it does
// not fail the server. `tokenizer`: the folder's, when the caller already read it (to size
// EngineOptions::sample_vocab before the engine started).
ServedModel make_served_model(const std::shared_ptr<Engine>& engine, const std::filesystem::path& model_dir,
                              std::vector<std::string> names, std::optional<Tokenizer> tokenizer = std::nullopt);

}  // namespace inferdesk::server
