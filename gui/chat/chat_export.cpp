#include "gui/chat/chat_export.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>

#include <algorithm>
#include <map>

namespace inferdesk::gui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

// A JSON object from untrusted text; empty when it is not one.
QJsonObject object_of(const QString& json) {
  QJsonParseError err{};
  const QJsonDocument doc = QJsonDocument::fromJson(json.toUtf8(), &err);
  return err.error == QJsonParseError::NoError && doc.isObject() ? doc.object() : QJsonObject{};
}

QString iso_time(std::int64_t ms) { return QDateTime::fromMSecsSinceEpoch(ms, Qt::UTC).toString(Qt::ISODateWithMs); }

QString role_title(store::Role r) {
  switch (r) {
    case store::Role::System: return "System";
    case store::Role::User: return "User";
    case store::Role::Assistant: return "Assistant";
  }
  return "Message";
}

bool older(const store::Message& a, const store::Message& b) {
  return a.created_at != b.created_at ? a.created_at < b.created_at : a.id < b.id;
}

// Children of each message (0: the roots), oldest first: the store's sibling order.
std::map<std::int64_t, std::vector<const store::Message*>> children_of(const std::vector<store::Message>& all) {
  std::map<std::int64_t, std::vector<const store::Message*>> kids;
  for (const auto& m : all) kids[m.parent_id].push_back(&m);
  for (auto& [parent, list] : kids)
    std::sort(list.begin(), list.end(), [](const auto* a, const auto* b) { return older(*a, *b); });
  return kids;
}

QString header_of(const ChatExportInput& in) {
  QString md;
  const QString title = qs(in.chat.title).trimmed();
  md += "# " + (title.isEmpty() ? QString("Chat") : title) + "\n\n";
  QStringList meta{"Exported from InferDesk " + iso_time(QDateTime::currentMSecsSinceEpoch())};
  if (!in.modelName.isEmpty()) meta << "model: " + in.modelName;
  md += "*" + meta.join(", ") + "*\n\n";
  if (!in.chat.system_prompt.empty()) md += "### System\n\n" + qs(in.chat.system_prompt) + "\n\n";
  return md;
}

QString message_md(const store::Message& m, const QString& label) {
  QString md = "### " + role_title(m.role) + label + "\n\n" + qs(m.content) + "\n\n";
  if (m.role != store::Role::Assistant) return md;
  QString stats = formatReplyStats(qs(m.stats_json));
  if (m.status == store::MessageStatus::Stopped && !stats.contains("cancelled"))
    stats += stats.isEmpty() ? "stopped" : " \u00b7 stopped";
  if (m.status == store::MessageStatus::Error && !stats.contains("error"))
    stats += stats.isEmpty() ? "error" : " \u00b7 error";
  if (!stats.isEmpty()) md += "*" + stats + "*\n\n";
  return md;
}

}  // namespace

ChatExportInput readChatForExport(const store::ChatStore& chats, std::int64_t chatId, const QString& modelName) {
  ChatExportInput in;
  in.chat = chats.get_chat(chatId);
  if (in.chat.current_leaf != 0) in.messages = chats.path_to(in.chat.current_leaf);
  in.all = chats.all_messages(chatId);
  in.modelName = modelName;
  return in;
}

QString formatReplyStats(const QString& statsJson) {
  const QJsonObject o = object_of(statsJson);
  if (o.isEmpty()) return {};
  QStringList parts;
  if (o.value("tokens").isDouble()) {
    const int n = o.value("tokens").toInt();
    parts << QString("%1 %2").arg(n).arg(n == 1 ? "token" : "tokens");
  }
  const double rate = o.value("tokens_per_s").toDouble();
  if (rate > 0) parts << QString("%1 tok/s").arg(rate, 0, 'f', rate >= 1000 ? 0 : 1);
  const double ttft_ms = o.value("ttft_s").toDouble() * 1000.0;
  if (ttft_ms > 0)  // a tiny model on a fast CPU answers in well under a millisecond
    parts << (ttft_ms < 0.1  ? QString("first token <0.1 ms")
              : ttft_ms < 10 ? QString("first token %1 ms").arg(ttft_ms, 0, 'f', 1)
                             : QString("first token %1 ms").arg(ttft_ms, 0, 'f', 0));
  const QString reason = o.value("finish_reason").toString();
  if (!reason.isEmpty()) parts << reason;
  const QString error = o.value("error").toString();
  if (!error.isEmpty()) parts << error;
  return parts.join(QString(" \u00b7 "));
}

QByteArray exportMarkdown(const ChatExportInput& in) {
  QString md = header_of(in);
  for (const auto& m : in.messages) md += message_md(m, {});
  const qsizetype others = static_cast<qsizetype>(in.all.size()) - static_cast<qsizetype>(in.messages.size());
  if (others > 0)
    md += QString("---\n\n*This is the branch the chat shows; %1 %2 of other branches (edits and "
                  "regenerated replies) %3 not included. Export as JSON, or as Markdown with every "
                  "branch, to keep them.*\n")
              .arg(others)
              .arg(others == 1 ? "message" : "messages", others == 1 ? "is" : "are");
  return md.toUtf8();
}

QByteArray exportMarkdownAllBranches(const ChatExportInput& in) {
  QString md = header_of(in);
  const auto kids = children_of(in.all);
  // Depth first, iteratively (a deep chat must not overflow the stack).
  std::vector<std::pair<const store::Message*, QString>> stack;
  auto push_children = [&](std::int64_t parent) {
    const auto it = kids.find(parent);
    if (it == kids.end()) return;
    const auto& list = it->second;
    for (size_t i = list.size(); i-- > 0;) {
      const QString label = list.size() > 1 ? QString(" (version %1 of %2)").arg(i + 1).arg(list.size()) : QString();
      stack.push_back({list[i], label});
    }
  };
  push_children(0);
  while (!stack.empty()) {
    const auto [m, label] = stack.back();
    stack.pop_back();
    md += message_md(*m, label);
    push_children(m->id);
  }
  return md.toUtf8();
}

QByteArray exportJson(const ChatExportInput& in) {
  std::vector<const store::Message*> order;
  {  // parents before children: breadth-first from the roots, siblings oldest first
    const auto kids = children_of(in.all);
    std::vector<std::int64_t> queue{0};
    for (size_t q = 0; q < queue.size(); ++q) {
      const auto it = kids.find(queue[q]);
      if (it == kids.end()) continue;
      for (const store::Message* m : it->second) {
        order.push_back(m);
        queue.push_back(m->id);
      }
    }
  }
  QJsonArray messages;
  for (const store::Message* m : order) {
    QJsonObject o{{"id", static_cast<qint64>(m->id)},
                  {"parent_id", m->parent_id ? QJsonValue(static_cast<qint64>(m->parent_id)) : QJsonValue()},
                  {"role", store::to_string(m->role)},
                  {"content", qs(m->content)},
                  {"status", store::to_string(m->status)},
                  {"created_at", iso_time(m->created_at)}};
    const QJsonObject stats = object_of(qs(m->stats_json));
    if (!stats.isEmpty()) o.insert("stats", stats);
    messages.append(o);
  }
  QJsonObject root{{"format", "inferdesk-chat"},
                   {"version", 2},
                   {"title", qs(in.chat.title)},
                   {"system_prompt", qs(in.chat.system_prompt)},
                   {"sampling", object_of(qs(in.chat.sampling_json))},
                   {"created_at", iso_time(in.chat.created_at)},
                   {"updated_at", iso_time(in.chat.updated_at)},
                   {"exported_at", iso_time(QDateTime::currentMSecsSinceEpoch())},
                   {"current_leaf",
                    in.chat.current_leaf ? QJsonValue(static_cast<qint64>(in.chat.current_leaf)) : QJsonValue()},
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
