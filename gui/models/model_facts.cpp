#include "gui/models/model_facts.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>

#include <exception>

#include "core/chat/model_templates.h"
#include "core/engine/model_info.h"
#include "core/util/error.h"

namespace inferdesk::gui {

QString ModelFacts::toJson() const {
  const QJsonObject o{{"path", path},
                      {"name", name},
                      {"model_type", model_type},
                      {"architecture", architecture},
                      {"dtype", dtype},
                      {"quantization", quantization},
                      {"params_total", params_total},
                      {"params_active", params_active},
                      {"weight_bytes", weight_bytes},
                      {"size_on_disk", size_on_disk},
                      {"context_length", context_length},
                      {"num_layers", num_layers},
                      {"num_experts", num_experts},
                      {"experts_per_token", experts_per_token},
                      {"num_shards", num_shards},
                      {"has_tokenizer", has_tokenizer},
                      {"has_chat_template", has_chat_template},
                      {"chat_template_problem", chat_template_problem}};
  return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
}

std::optional<ModelFacts> ModelFacts::fromJson(const QString& json) {
  QJsonParseError err{};
  const QJsonDocument doc = QJsonDocument::fromJson(json.toUtf8(), &err);
  if (err.error != QJsonParseError::NoError || !doc.isObject()) return std::nullopt;
  const QJsonObject o = doc.object();
  if (!o.value("path").isString() || !o.value("model_type").isString()) return std::nullopt;
  ModelFacts f;
  f.path = o.value("path").toString();
  f.name = o.value("name").toString();
  f.model_type = o.value("model_type").toString();
  f.architecture = o.value("architecture").toString();
  f.dtype = o.value("dtype").toString();
  f.quantization = o.value("quantization").toString("none");
  auto i64 = [&](const char* k) { return std::max<qint64>(0, o.value(k).toInteger()); };
  auto i32 = [&](const char* k) { return std::max(0, o.value(k).toInt()); };
  f.params_total = i64("params_total");
  f.params_active = i64("params_active");
  f.weight_bytes = i64("weight_bytes");
  f.size_on_disk = i64("size_on_disk");
  f.context_length = i64("context_length");
  f.num_layers = i32("num_layers");
  f.num_experts = i32("num_experts");
  f.experts_per_token = i32("experts_per_token");
  f.num_shards = i32("num_shards");
  f.has_tokenizer = o.value("has_tokenizer").toBool();
  f.has_chat_template = o.value("has_chat_template").toBool();
  f.chat_template_problem = o.value("chat_template_problem").toString();
  return f;
}

ModelFacts inspect_model_facts(const QString& path) {
  if (path.trimmed().isEmpty()) throw Error(ErrorCode::InvalidArgument, "no folder was given");
  const QFileInfo fi(path);
  if (!fi.isDir()) throw Error(ErrorCode::NotFound, path.toStdString() + " is not a folder");
  const QString abs = QDir::cleanPath(fi.absoluteFilePath());
  const std::filesystem::path dir = abs.toStdString();
  const ModelInfo info = inspect_model_folder(dir);
  ModelFacts f;
  f.path = abs;
  f.name = QFileInfo(abs).fileName();
  f.model_type = QString::fromStdString(info.config.model_type);
  f.architecture = QString::fromStdString(info.config.architecture);
  f.dtype = QString::fromStdString(info.dtype);
  f.quantization = QString::fromStdString(info.config.quantization.describe());
  f.params_total = info.params_total;
  f.params_active = info.params_active;
  f.weight_bytes = info.weight_bytes;
  f.size_on_disk = info.size_on_disk;
  f.context_length = info.context_length;
  f.num_layers = static_cast<int>(info.config.num_hidden_layers);
  f.num_experts = static_cast<int>(info.config.num_experts);
  f.experts_per_token = static_cast<int>(info.config.num_experts_per_tok);
  f.num_shards = info.num_shards;
  f.has_tokenizer = info.has_tokenizer;
  const chat::ChatTemplateStatus t = chat::chat_template_status(dir);  // the check info makes
  f.has_chat_template = t.usable;
  f.chat_template_problem = QString::fromStdString(t.problem);
  return f;
}

QString chatTemplateWords(const ModelFacts& f, const QString& none) {
  if (f.has_chat_template) return QCoreApplication::translate("ModelFacts", "yes");
  if (f.chat_template_problem.isEmpty()) return none;
  return QCoreApplication::translate("ModelFacts", "unusable (%1)").arg(f.chat_template_problem);
}

QString format_bytes(qint64 bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes >= (1LL << 30)) return QString::number(b / (1LL << 30), 'f', 2) + " GiB";
  if (bytes >= (1LL << 20)) return QString::number(b / (1LL << 20), 'f', 1) + " MiB";
  if (bytes >= (1LL << 10)) return QString::number(b / (1LL << 10), 'f', 1) + " KiB";
  return QString::number(bytes) + " B";
}

QString format_count(qint64 n) {
  const double v = static_cast<double>(n);
  if (n >= 1'000'000'000) return QString::number(v / 1e9, 'f', 2) + " B";
  if (n >= 1'000'000) return QString::number(v / 1e6, 'f', n >= 100'000'000 ? 0 : 1) + " M";
  if (n >= 1'000) return QString::number(v / 1e3, 'f', 1) + " K";
  return QString::number(n);
}

}  // namespace inferdesk::gui
