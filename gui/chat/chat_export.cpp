#include "gui/chat/chat_export.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>

namespace inferdesk::gui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

// A JSON object from untrusted text; empty when it is not one.
QJsonObject object_of(const QString& json) {
  QJsonParseError err{};
  const QJsonDocument doc = QJsonDocument::fromJson(json.toUtf8(), &err);
  return err.error == QJsonParseError::NoError && doc.isObject() ? doc.object() : QJsonObject{};
}

QString iso_time(std::int64_t ms) {
  return QDateTime::fromMSecsSinceEpoch(ms).toUTC().toString(Qt::ISODateWithMs);
}

QString role_title(store::Role r) {
  switch (r) {
    case store::Role::System: return "System";
    case store::Role::User: return "User";
    case store::Role::Assistant: return "Assistant";
  }
  return "Message";
}

}  // namespace

QString formatReplyStats(const QString& statsJson) {
  const QJsonObject o = object_of(statsJson);
  if (o.isEmpty()) return {};
  QStringList parts;
  if (o.value("tokens").isDouble()) {
    const int n = o.value("tokens").toInt();
    parts << QString("%1 %2").arg(n).arg(n == 1 ? "token" : "tokens");
  }
  if (o.value("tokens_per_s").toDouble() > 0)
    parts << QString("%1 tok/s").arg(o.value("tokens_per_s").toDouble(), 0, 'f', 1);
  if (o.value("ttft_s").toDouble() > 0)
    parts << QString("first token %1 ms").arg(o.value("ttft_s").toDouble() * 1000.0, 0, 'f', 0);
  const QString reason = o.value("finish_reason").toString();
  if (!reason.isEmpty()) parts << reason;
  const QString error = o.value("error").toString();
  if (!error.isEmpty()) parts << error;
  return parts.join(QString(" \u00b7 "));
}

QByteArray exportMarkdown(const ChatExportInput& in) {
  QString md;
  const QString title = qs(in.chat.title).trimmed();
  md += "# " + (title.isEmpty() ? QString("Chat") : title) + "\n\n";
  QStringList meta{"Exported from InferDesk " + iso_time(QDateTime::currentMSecsSinceEpoch())};
  if (!in.modelName.isEmpty()) meta << "model: " + in.modelName;
  md += "*" + meta.join(", ") + "*\n\n";
  if (!in.chat.system_prompt.empty()) md += "### System\n\n" + qs(in.chat.system_prompt) + "\n\n";
  for (const auto& m : in.messages) {
    md += "### " + role_title(m.role) + "\n\n" + qs(m.content) + "\n\n";
    if (m.role != store::Role::Assistant) continue;
    QString stats = formatReplyStats(qs(m.stats_json));
    if (m.status == store::MessageStatus::Stopped && !stats.contains("cancelled")) {
      stats += stats.isEmpty() ? "stopped" : " \u00b7 stopped";
    }
    if (!stats.isEmpty()) md += "*" + stats + "*\n\n";
  }
  return md.toUtf8();
}

QByteArray exportJson(const ChatExportInput& in) {
  QJsonArray messages;
  for (const auto& m : in.messages) {
    QJsonObject o{{"id", static_cast<qint64>(m.id)},
                  {"parent_id", m.parent_id ? QJsonValue(static_cast<qint64>(m.parent_id)) : QJsonValue()},
                  {"role", store::to_string(m.role)},
                  {"content", qs(m.content)},
                  {"status", store::to_string(m.status)},
                  {"created_at", iso_time(m.created_at)}};
    const QJsonObject stats = object_of(qs(m.stats_json));
    if (!stats.isEmpty()) o.insert("stats", stats);
    messages.append(o);
  }
  QJsonObject root{{"format", "inferdesk-chat"},
                   {"version", 1},
                   {"title", qs(in.chat.title)},
                   {"system_prompt", qs(in.chat.system_prompt)},
                   {"sampling", object_of(qs(in.chat.sampling_json))},
                   {"created_at", iso_time(in.chat.created_at)},
                   {"exported_at", iso_time(QDateTime::currentMSecsSinceEpoch())},
                   {"messages", messages}};
  if (!in.modelName.isEmpty()) root.insert("model", in.modelName);
  return QJsonDocument(root).toJson(QJsonDocument::Indented);
}

bool writeExportFile(const QString& path, const QByteArray& data, QString* error) {
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly)) {
    if (error) *error = QString("could not write %1: %2").arg(path, file.errorString());
    return false;
  }
  if (file.write(data) != data.size()) {
    if (error) *error = QString("could not write %1: %2").arg(path, file.errorString());
    file.cancelWriting();
    return false;
  }
  if (!file.commit()) {  // the old file, if any, is untouched
    if (error) *error = QString("could not write %1: %2").arg(path, file.errorString());
    return false;
  }
  return true;
}

}  // namespace inferdesk::gui
