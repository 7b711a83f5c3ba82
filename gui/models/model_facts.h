// What the model manager knows about a model folder without loading it (from
// core/engine/model_info.h inspect_model_folder), kept in the store's model registry as JSON, and
// the human-readable forms the pages show.
#pragma once

#include <QString>

#include <optional>

namespace inferdesk::gui {

struct ModelFacts {
  QString path;          // absolute folder path
  QString name;          // folder name
  QString model_type;    // "qwen3", "mixtral", ...
  QString architecture;  // "Qwen3ForCausalLM" (may be empty)
  QString dtype;         // dtype holding most weight bytes ("BF16")
  QString quantization;  // the checkpoint's scheme ("none", "compressed-tensors: fp8 e4m3 per-channel, ...")
  qint64 params_total = 0;
  qint64 params_active = 0;  // per token; == total for dense models
  qint64 weight_bytes = 0;
  qint64 size_on_disk = 0;
  qint64 context_length = 0;
  int num_layers = 0;
  int num_experts = 0;
  int experts_per_token = 0;
  int num_shards = 0;
  bool has_tokenizer = false;
  bool has_chat_template = false;
  QString chat_template_problem;  // why the folder's template cannot be used (empty: usable or none)

  bool is_moe() const { return num_experts > 0; }
  QString toJson() const;
  // Parses what toJson wrote (untrusted: the database may hold anything); nullopt when it is not
  // a JSON object with the expected fields.
  static std::optional<ModelFacts> fromJson(const QString& json);
};

// Validates the folder (same checks as loading, headers only) and collects its facts. Throws
// inferdesk::Error with a message naming the file and the problem.
ModelFacts inspect_model_facts(const QString& path);

// "1.50 GiB", "512 MiB", "12.0 KiB", "100 B".
QString format_bytes(qint64 bytes);

// "yes", `none` when the folder has no template, or "unusable (why)" (a template that does not
// parse, a chat_template that is not a string): what the model table and the details say.
QString chatTemplateWords(const ModelFacts& f, const QString& none);
// "7.62 B", "494 M", "1.2 K", "12".
QString format_count(qint64 n);

}  // namespace inferdesk::gui
