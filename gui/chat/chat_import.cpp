#include "gui/chat/chat_import.h"

#include <QDateTime>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <cmath>
#include <exception>
#include <map>
#include <set>

namespace inferdesk::gui {

namespace {

constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53

// A problem in the file, thrown inside the parser and turned into the result's sentence.
struct Bad {
  QString what;
};

[[noreturn]] void bad(const QString& what) { throw Bad{what}; }

std::int64_t integer_of(const QJsonValue& v, const QString& field) {
  const double d = v.toDouble(std::nan(""));
  if (!v.isDouble() || !std::isfinite(d) || std::floor(d) != d || std::abs(d) > kMaxExactInteger)
    bad(field + " must be an integer");
  return static_cast<std::int64_t>(d);
}

QString string_of(const QJsonObject& o, const char* key, const QString& where, bool required) {
  const QJsonValue v = o.value(QLatin1String(key));
  if (v.isUndefined() || v.isNull()) {
    if (required) bad(where + QString(": \"%1\" is missing").arg(key));
    return {};
  }
  if (!v.isString()) bad(where + QString(": \"%1\" must be text").arg(key));
  return v.toString();
}

// ISO 8601 time -> unix ms; `fallback` when absent.
std::int64_t time_of(const QJsonObject& o, const char* key, const QString& where, std::int64_t fallback) {
  const QString text = string_of(o, key, where, false);
  if (text.isEmpty()) return fallback;
  const QDateTime t = QDateTime::fromString(text, Qt::ISODateWithMs);
  if (!t.isValid()) bad(where + QString(": \"%1\" is not an ISO 8601 time (%2)").arg(key, text.left(40)));
  return t.toMSecsSinceEpoch();
}

QString compact(const QJsonObject& o) { return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact)); }

store::Message message_of(const QJsonValue& v, int index, std::int64_t fallback_time) {
  const QString where = QString("message %1").arg(index + 1);
  if (!v.isObject()) bad(where + " is not a JSON object");
  const QJsonObject o = v.toObject();
  store::Message m;
  m.id = integer_of(o.value("id"), where + ": \"id\"");
  const QString at = QString("message %1 (id %2)").arg(index + 1).arg(m.id);
  const QJsonValue parent = o.value("parent_id");
  m.parent_id = parent.isNull() || parent.isUndefined() ? 0 : integer_of(parent, at + ": \"parent_id\"");
  try {
    m.role = store::parse_role(string_of(o, "role", at, true).toStdString());
    const QString status = string_of(o, "status", at, false);
    m.status = status.isEmpty() ? store::MessageStatus::Complete : store::parse_message_status(status.toStdString());
  } catch (const std::exception& e) {
    bad(at + ": " + QString::fromUtf8(e.what()));
  }
  // A reply that was streaming when exported is not streaming here: nothing writes into it.
  if (m.status == store::MessageStatus::Streaming) m.status = store::MessageStatus::Stopped;
  m.content = string_of(o, "content", at, true).toStdString();
  const QJsonValue stats = o.value("stats");
  if (!stats.isUndefined() && !stats.isNull() && !stats.isObject()) bad(at + ": \"stats\" must be a JSON object");
  m.stats_json = stats.isObject() ? compact(stats.toObject()).toStdString() : "{}";
  m.created_at = time_of(o, "created_at", at, fallback_time);
  return m;
}

// Parents before children (siblings in their time order); refuses dangling parents and cycles.
std::vector<store::Message> in_tree_order(std::vector<store::Message> ms) {
  std::map<std::int64_t, const store::Message*> by_id;
  for (const auto& m : ms)
    if (!by_id.emplace(m.id, &m).second) bad(QString("message id %1 appears twice").arg(m.id));
  std::map<std::int64_t, std::vector<const store::Message*>> kids;
  for (const auto& m : ms) {
    if (m.parent_id != 0 && !by_id.count(m.parent_id))
      bad(QString("message %1: its parent %2 is not in the file").arg(m.id).arg(m.parent_id));
    kids[m.parent_id].push_back(&m);
  }
  for (auto& [p, list] : kids)
    std::sort(list.begin(), list.end(), [](const auto* a, const auto* b) {
      return a->created_at != b->created_at ? a->created_at < b->created_at : a->id < b->id;
    });
  std::vector<store::Message> out;
  std::vector<std::int64_t> queue{0};
  for (size_t q = 0; q < queue.size(); ++q) {
    const auto it = kids.find(queue[q]);
    if (it == kids.end()) continue;
    for (const store::Message* m : it->second) {
      out.push_back(*m);
      queue.push_back(m->id);
    }
  }
  if (out.size() != ms.size()) bad("some messages are their own ancestors (the parent links form a cycle)");
  return out;
}

// Version 1 files hold one branch in order, possibly without parents: chain them.
void chain_branch(std::vector<store::Message>& ms) {
  for (size_t i = 0; i < ms.size(); ++i) ms[i].parent_id = i == 0 ? 0 : ms[i - 1].id;
}

void parse(const QByteArray& json, std::int64_t now_ms, ParsedChat* out) {
  QJsonParseError err{};
  const QJsonDocument doc = QJsonDocument::fromJson(json, &err);
  if (err.error != QJsonParseError::NoError)
    bad(QString("the file is not JSON: %1 (at byte %2)").arg(err.errorString()).arg(err.offset));
  if (!doc.isObject()) bad("the file is JSON but not an exported chat (no top-level object)");
  const QJsonObject root = doc.object();
  if (root.value("format").toString() != "inferdesk-chat")
    bad("the file is not an InferDesk chat export (\"format\" is not \"inferdesk-chat\")");
  const QJsonValue version = root.value("version");
  const std::int64_t v = integer_of(version, "\"version\"");
  if (v < 1 || v > 2)
    bad(QString("version %1 of the chat format is not known to this InferDesk (it reads 1 and 2)").arg(v));
  store::Chat& chat = out->chat;
  chat.title = string_of(root, "title", "the chat", false).trimmed().toStdString();
  if (chat.title.empty()) chat.title = "Imported chat";
  chat.system_prompt = string_of(root, "system_prompt", "the chat", false).toStdString();
  const QJsonValue sampling = root.value("sampling");
  if (!sampling.isUndefined() && !sampling.isNull() && !sampling.isObject()) bad("\"sampling\" must be a JSON object");
  chat.sampling_json = sampling.isObject() ? compact(sampling.toObject()).toStdString() : "{}";
  chat.created_at = time_of(root, "created_at", "the chat", now_ms);
  chat.updated_at = time_of(root, "updated_at", "the chat", now_ms);
  const QJsonValue list = root.value("messages");
  if (!list.isArray()) bad("\"messages\" must be a list");
  const QJsonArray array = list.toArray();
  if (array.size() > kMaxImportMessages)
    bad(QString("the file has %1 messages; at most %2 are imported").arg(array.size()).arg(kMaxImportMessages));
  std::vector<store::Message> ms;
  for (int i = 0; i < array.size(); ++i) ms.push_back(message_of(array[i], i, chat.created_at + i));
  if (v == 1) chain_branch(ms);
  out->messages = in_tree_order(std::move(ms));
  const QJsonValue leaf = root.value("current_leaf");
  if (!leaf.isUndefined() && !leaf.isNull()) {
    chat.current_leaf = integer_of(leaf, "\"current_leaf\"");
    const bool known = std::any_of(out->messages.begin(), out->messages.end(),
                                   [&](const store::Message& m) { return m.id == chat.current_leaf; });
    if (!known) bad(QString("\"current_leaf\" %1 is not one of the messages").arg(chat.current_leaf));
  } else {
    chat.current_leaf = out->messages.empty() ? 0 : out->messages.back().id;
    if (v == 2 && !out->messages.empty()) {  // the newest leaf, as the store would pick
      std::set<std::int64_t> parents;
      for (const auto& m : out->messages) parents.insert(m.parent_id);
      for (const auto& m : out->messages)
        if (!parents.count(m.id)) chat.current_leaf = m.id;
    }
  }
}

}  // namespace

bool parseChatExport(const QByteArray& json, std::int64_t now_ms, ParsedChat* out, QString* error) {
  ParsedChat parsed;
  try {
    parse(json, now_ms, &parsed);
  } catch (const Bad& b) {
    if (error) *error = b.what;
    return false;
  }
  if (out) *out = std::move(parsed);
  return true;
}

ChatImportResult importChatJson(store::ChatStore& chats, const QByteArray& json, std::int64_t now_ms) {
  ChatImportResult r;
  ParsedChat parsed;
  if (!parseChatExport(json, now_ms, &parsed, &r.error)) return r;
  try {
    r.chat_id = chats.insert_chat(parsed.chat, parsed.messages);
  } catch (const std::exception& e) {
    r.error = QString("could not save the imported chat: %1").arg(QString::fromUtf8(e.what()));
    return r;
  }
  r.ok = true;
  r.messages = static_cast<int>(parsed.messages.size());
  return r;
}

ChatImportResult importChatFile(store::ChatStore& chats, const QString& path, std::int64_t now_ms) {
  ChatImportResult r;
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) {
    r.error = QString("could not read %1: %2").arg(path, f.errorString());
    return r;
  }
  if (f.size() > kMaxImportBytes) {
    r.error = QString("%1 is %2 MiB; chat exports larger than %3 MiB are not imported")
                  .arg(path)
                  .arg(f.size() >> 20)
                  .arg(kMaxImportBytes >> 20);
    return r;
  }
  r = importChatJson(chats, f.readAll(), now_ms);
  if (!r.ok) r.error = QString("%1 cannot be imported: %2").arg(path, r.error);
  return r;
}

}  // namespace inferdesk::gui
