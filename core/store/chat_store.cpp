// ChatStore: chats and their message trees.
#include <algorithm>
#include <string>
#include <unordered_map>

#include "core/store/statement.h"
#include "core/store/store.h"
#include "core/util/error.h"

namespace inferdesk::store {
namespace {

using detail::Statement;

// The last column is the newest message's time (NULL without messages), from messages_by_chat.
constexpr const char* kChatColumns =
    "chats.id, title, system_prompt, sampling_json, model_id, current_leaf, chats.created_at, "
    "updated_at, (SELECT MAX(lm.created_at) FROM messages AS lm WHERE lm.chat_id = chats.id)";
constexpr const char* kMessageColumns = "id, chat_id, parent_id, role, content, status, stats_json, created_at";

std::string sql(const char* head, const char* columns, const char* tail) { return std::string(head) + columns + tail; }

Chat read_chat(const Statement& s) {
  Chat c;
  c.id = s.int64(0);
  c.title = s.text(1);
  c.system_prompt = s.text(2);
  c.sampling_json = s.text(3);
  c.model_id = s.optional_int64(4);
  c.current_leaf = s.optional_int64(5).value_or(0);
  c.created_at = s.int64(6);
  c.updated_at = s.int64(7);
  c.last_message_at = s.optional_int64(8).value_or(0);
  return c;
}

Message read_message(const Statement& s) {
  Message m;
  m.id = s.int64(0);
  m.chat_id = s.int64(1);
  m.parent_id = s.optional_int64(2).value_or(0);
  try {
    m.role = parse_role(s.text(3));
    m.status = parse_message_status(s.text(5));
  } catch (const Error& e) {  // the file holds something we never write
    throw Error(ErrorCode::Format, "message " + std::to_string(m.id) + " in the database: " + e.what());
  }
  m.content = s.text(4);
  m.stats_json = s.text(6);
  m.created_at = s.int64(7);
  return m;
}

std::vector<Message> read_messages(Statement& s) {
  std::vector<Message> out;
  while (s.step()) out.push_back(read_message(s));
  return out;
}

std::vector<Chat> read_chats(Statement& s) {
  std::vector<Chat> out;
  while (s.step()) out.push_back(read_chat(s));
  return out;
}

[[noreturn]] void unknown(const char* what, std::int64_t id) {
  throw Error(ErrorCode::InvalidArgument,
              std::string("no ") + what + " with id " + std::to_string(id) + " in the database");
}

// `text` as a LIKE pattern matching it anywhere, with \ as the escape character.
std::string contains_pattern(std::string_view text) {
  std::string p = "%";
  for (char ch : text) {
    if (ch == '%' || ch == '_' || ch == '\\') p += '\\';
    p += ch;
  }
  p += '%';
  return p;
}

}  // namespace

const char* to_string(Role role) {
  switch (role) {
    case Role::System: return "system";
    case Role::User: return "user";
    case Role::Assistant: return "assistant";
  }
  return "user";
}

const char* to_string(MessageStatus status) {
  switch (status) {
    case MessageStatus::Complete: return "complete";
    case MessageStatus::Streaming: return "streaming";
    case MessageStatus::Stopped: return "stopped";
    case MessageStatus::Error: return "error";
  }
  return "complete";
}

Role parse_role(std::string_view text) {
  for (Role r : {Role::System, Role::User, Role::Assistant})
    if (text == to_string(r)) return r;
  throw Error(ErrorCode::InvalidArgument, "unknown message role '" + std::string(text) + "'");
}

MessageStatus parse_message_status(std::string_view text) {
  for (MessageStatus st :
       {MessageStatus::Complete, MessageStatus::Streaming, MessageStatus::Stopped, MessageStatus::Error})
    if (text == to_string(st)) return st;
  throw Error(ErrorCode::InvalidArgument, "unknown message status '" + std::string(text) + "'");
}

// ---- chats ----

std::int64_t ChatStore::create_chat(std::string_view title, std::string_view system_prompt,
                                    std::string_view sampling_json, std::optional<std::int64_t> model_id) {
  Database::Transaction tx(db_, "saving a new chat");
  if (model_id) ModelRegistry(db_).get(*model_id);  // throws for an unknown model
  const auto now = db_.now_ms();
  Statement s(db_,
              "INSERT INTO chats(title, system_prompt, sampling_json, model_id, created_at, "
              "updated_at) VALUES(?1, ?2, ?3, ?4, ?5, ?5) RETURNING id",
              "saving a new chat");
  s.bind(1, title).bind(2, system_prompt).bind(3, sampling_json).bind(4, model_id).bind(5, now);
  if (!s.step()) throw Error(ErrorCode::Internal, "saving a new chat: no id returned");
  const auto id = s.int64(0);
  s.run();
  tx.commit();
  return id;
}

void ChatStore::require_chat(std::int64_t chat_id) const {
  Statement s(db_, "SELECT 1 FROM chats WHERE id = ?1", "reading a chat");
  if (!s.bind(1, chat_id).step()) unknown("chat", chat_id);
}

void ChatStore::touch_chat(std::int64_t chat_id) {
  if (detail::write_one(db_, "saving a chat", "UPDATE chats SET updated_at = ?2 WHERE id = ?1", chat_id,
                        db_.now_ms()) == 0)
    unknown("chat", chat_id);
}

namespace {
// UPDATE chats SET <column> = ?2, updated_at = ?3 WHERE id = ?1, in its own transaction.
void update_chat_column(Database& db, std::int64_t chat_id, const char* column, std::string_view value) {
  const auto text = sql("UPDATE chats SET ", column, " = ?2, updated_at = ?3 WHERE id = ?1");
  if (detail::write_one(db, std::string("saving a chat's ") + column, text.c_str(), chat_id, value, db.now_ms()) == 0)
    unknown("chat", chat_id);
}
}  // namespace

void ChatStore::rename_chat(std::int64_t chat_id, std::string_view title) {
  update_chat_column(db_, chat_id, "title", title);
}

void ChatStore::set_system_prompt(std::int64_t chat_id, std::string_view system_prompt) {
  update_chat_column(db_, chat_id, "system_prompt", system_prompt);
}

void ChatStore::set_sampling_json(std::int64_t chat_id, std::string_view sampling_json) {
  update_chat_column(db_, chat_id, "sampling_json", sampling_json);
}

void ChatStore::set_chat_model(std::int64_t chat_id, std::optional<std::int64_t> model_id) {
  if (model_id) ModelRegistry(db_).get(*model_id);  // throws for an unknown model
  if (detail::write_one(db_, "saving a chat's model", "UPDATE chats SET model_id = ?2, updated_at = ?3 WHERE id = ?1",
                        chat_id, model_id, db_.now_ms()) == 0)
    unknown("chat", chat_id);
}

void ChatStore::delete_chat(std::int64_t chat_id) {
  if (detail::write_one(db_, "deleting a chat", "DELETE FROM chats WHERE id = ?1", chat_id) == 0)
    unknown("chat", chat_id);
}

Chat ChatStore::get_chat(std::int64_t chat_id) const {
  Statement s(db_, sql("SELECT ", kChatColumns, " FROM chats WHERE chats.id = ?1").c_str(), "reading a chat");
  if (!s.bind(1, chat_id).step()) unknown("chat", chat_id);
  return read_chat(s);
}

std::vector<Chat> ChatStore::list_chats() const {
  Statement s(db_, sql("SELECT ", kChatColumns, " FROM chats ORDER BY updated_at DESC, chats.id DESC").c_str(),
              "listing chats");
  return read_chats(s);
}

std::vector<Chat> ChatStore::search_chats(std::string_view text) const {
  // SQLite refuses LIKE patterns over 50000 bytes; nobody types a search that long.
  constexpr std::size_t kMaxSearch = 10000;
  if (text.size() > kMaxSearch)
    throw Error(ErrorCode::InvalidArgument,
                "searching chats: the search text is longer than " + std::to_string(kMaxSearch) + " bytes");
  Statement s(db_,
              sql("SELECT ", kChatColumns,
                  " FROM chats WHERE chats.title LIKE ?1 ESCAPE '\\' OR EXISTS (SELECT 1 FROM "
                  "messages AS m WHERE m.chat_id = chats.id AND m.content LIKE ?1 ESCAPE '\\') "
                  "ORDER BY updated_at DESC, chats.id DESC")
                  .c_str(),
              "searching chats");
  s.bind(1, contains_pattern(text));
  return read_chats(s);
}

// ---- messages ----

std::int64_t ChatStore::add_message(std::int64_t chat_id, std::int64_t parent_id, Role role, std::string_view content,
                                    MessageStatus status) {
  Database::Transaction tx(db_, "saving a message");
  require_chat(chat_id);
  if (parent_id != 0 && get_message(parent_id).chat_id != chat_id)
    throw Error(ErrorCode::InvalidArgument,
                "message " + std::to_string(parent_id) + " belongs to another chat than " + std::to_string(chat_id));
  const auto now = db_.now_ms();
  Statement s(db_,
              "INSERT INTO messages(chat_id, parent_id, role, content, status, created_at) "
              "VALUES(?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
              "saving a message");
  s.bind(1, chat_id)
      .bind(2, parent_id == 0 ? std::nullopt : std::optional<std::int64_t>(parent_id))
      .bind(3, std::string_view(to_string(role)))
      .bind(4, content)
      .bind(5, std::string_view(to_string(status)))
      .bind(6, now);
  if (!s.step()) throw Error(ErrorCode::Internal, "saving a message: no id returned");
  const auto id = s.int64(0);
  s.run();
  Statement leaf(db_, "UPDATE chats SET current_leaf = ?2, updated_at = ?3 WHERE id = ?1", "saving a message");
  leaf.bind(1, chat_id).bind(2, id).bind(3, now).run();
  tx.commit();
  return id;
}

void ChatStore::append_to_message(std::int64_t message_id, std::string_view text) {
  if (detail::write_one(db_, "saving a streamed reply",
                        "UPDATE messages SET content = content || ?2 WHERE id = ?1 AND status = 'streaming'",
                        message_id, text) == 0) {
    const auto m = get_message(message_id);  // throws for an unknown id
    throw Error(ErrorCode::InvalidArgument, "message " + std::to_string(m.id) + " is " + to_string(m.status) +
                                                ", not streaming: nothing can be appended");
  }
}

void ChatStore::finish_message(std::int64_t message_id, MessageStatus status, std::string_view stats_json) {
  Database::Transaction tx(db_, "saving a reply's end");
  if (detail::write_one(db_, "saving a reply's end", "UPDATE messages SET status = ?2, stats_json = ?3 WHERE id = ?1",
                        message_id, std::string_view(to_string(status)), stats_json) == 0)
    unknown("message", message_id);
  touch_chat(get_message(message_id).chat_id);
  tx.commit();
}

void ChatStore::set_message_content(std::int64_t message_id, std::string_view content) {
  Database::Transaction tx(db_, "saving a message");
  if (detail::write_one(db_, "saving a message", "UPDATE messages SET content = ?2 WHERE id = ?1", message_id,
                        content) == 0)
    unknown("message", message_id);
  touch_chat(get_message(message_id).chat_id);
  tx.commit();
}

int ChatStore::mark_interrupted_streams() {
  if (db_.read_only()) return 0;
  return detail::write_one(db_, "recovering interrupted replies",
                           "UPDATE messages SET status = 'stopped' WHERE status = 'streaming'");
}

void ChatStore::set_current_leaf(std::int64_t chat_id, std::int64_t leaf_id) {
  Database::Transaction tx(db_, "saving the chosen branch");
  require_chat(chat_id);
  if (leaf_id != 0 && get_message(leaf_id).chat_id != chat_id)
    throw Error(ErrorCode::InvalidArgument,
                "message " + std::to_string(leaf_id) + " is not in chat " + std::to_string(chat_id));
  detail::write_one(db_, "saving the chosen branch", "UPDATE chats SET current_leaf = ?2 WHERE id = ?1", chat_id,
                    leaf_id == 0 ? std::nullopt : std::optional<std::int64_t>(leaf_id));
  tx.commit();
}

Message ChatStore::get_message(std::int64_t message_id) const {
  Statement s(db_, sql("SELECT ", kMessageColumns, " FROM messages WHERE id = ?1").c_str(), "reading a message");
  if (!s.bind(1, message_id).step()) unknown("message", message_id);
  return read_message(s);
}

namespace {
// How many messages a chat has: the longest chain a walk through it can take without a cycle.
std::int64_t message_count(const Database& db, std::int64_t chat_id) {
  Statement s(db, "SELECT count(*) FROM messages WHERE chat_id = ?1", "reading a chat");
  s.bind(1, chat_id).step();
  return s.int64(0);
}

[[noreturn]] void broken_tree(std::int64_t chat_id) {
  throw Error(ErrorCode::Format, "chat " + std::to_string(chat_id) +
                                     " in the database has a broken message tree (a message is "
                                     "its own ancestor or its parent is in another chat)");
}
}  // namespace

std::vector<Message> ChatStore::path_to(std::int64_t leaf_id) const {
  std::vector<Message> path{get_message(leaf_id)};
  const auto chat_id = path.front().chat_id;
  const auto limit = message_count(db_, chat_id);
  while (path.back().parent_id != 0) {
    if (static_cast<std::int64_t>(path.size()) >= limit) broken_tree(chat_id);
    path.push_back(get_message(path.back().parent_id));
    if (path.back().chat_id != chat_id) broken_tree(chat_id);
  }
  std::reverse(path.begin(), path.end());
  return path;
}

std::vector<Message> ChatStore::children(std::int64_t parent_id) const {
  get_message(parent_id);  // throws for an unknown id
  Statement s(db_,
              sql("SELECT ", kMessageColumns, " FROM messages WHERE parent_id = ?1 ORDER BY created_at, id").c_str(),
              "reading messages");
  s.bind(1, parent_id);
  return read_messages(s);
}

std::vector<Message> ChatStore::roots(std::int64_t chat_id) const {
  require_chat(chat_id);
  Statement s(db_,
              sql("SELECT ", kMessageColumns,
                  " FROM messages WHERE chat_id = ?1 AND parent_id IS NULL ORDER BY created_at, id")
                  .c_str(),
              "reading messages");
  s.bind(1, chat_id);
  return read_messages(s);
}

Siblings ChatStore::siblings(std::int64_t message_id) const {
  const auto m = get_message(message_id);
  const auto all = m.parent_id == 0 ? roots(m.chat_id) : children(m.parent_id);
  Siblings out;
  for (const auto& s : all) {
    if (s.id == message_id) out.index = out.ids.size();
    out.ids.push_back(s.id);
  }
  return out;
}

std::int64_t ChatStore::latest_leaf_under(std::int64_t message_id) const {
  const auto chat_id = get_message(message_id).chat_id;
  const auto limit = message_count(db_, chat_id);
  Statement s(db_,
              "SELECT id, chat_id FROM messages WHERE parent_id = ?1 "
              "ORDER BY created_at DESC, id DESC LIMIT 1",
              "reading messages");
  std::int64_t id = message_id;
  for (std::int64_t steps = 0;; ++steps) {
    s.reset();
    if (!s.bind(1, id).step()) return id;
    if (steps >= limit || s.int64(1) != chat_id) broken_tree(chat_id);
    id = s.int64(0);
  }
}

std::vector<Message> ChatStore::all_messages(std::int64_t chat_id) const {
  require_chat(chat_id);
  Statement s(db_, sql("SELECT ", kMessageColumns, " FROM messages WHERE chat_id = ?1 ORDER BY id").c_str(),
              "reading messages");
  s.bind(1, chat_id);
  return read_messages(s);
}

// ---- import ----

std::int64_t ChatStore::insert_chat(const Chat& chat, const std::vector<Message>& messages) {
  constexpr const char* kWhat = "importing a chat";
  Database::Transaction tx(db_, kWhat);
  Statement c(db_,
              "INSERT INTO chats(title, system_prompt, sampling_json, created_at, updated_at) "
              "VALUES(?1, ?2, ?3, ?4, ?5) RETURNING id",
              kWhat);
  c.bind(1, chat.title).bind(2, chat.system_prompt).bind(3, chat.sampling_json);
  c.bind(4, chat.created_at).bind(5, chat.updated_at);
  if (!c.step()) throw Error(ErrorCode::Internal, "importing a chat: no id returned");
  const auto chat_id = c.int64(0);
  c.run();
  std::unordered_map<std::int64_t, std::int64_t> new_id;  // the caller's id -> ours
  Statement m(db_,
              "INSERT INTO messages(chat_id, parent_id, role, content, status, stats_json, "
              "created_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
              kWhat);
  for (const Message& msg : messages) {
    if (new_id.count(msg.id))
      throw Error(ErrorCode::InvalidArgument,
                  "importing a chat: message id " + std::to_string(msg.id) + " appears twice");
    std::optional<std::int64_t> parent;
    if (msg.parent_id != 0) {
      const auto it = new_id.find(msg.parent_id);
      if (it == new_id.end())
        throw Error(ErrorCode::InvalidArgument, "importing a chat: message " + std::to_string(msg.id) + " has parent " +
                                                    std::to_string(msg.parent_id) + ", which does not come before it");
      parent = it->second;
    }
    m.reset();
    m.bind(1, chat_id).bind(2, parent).bind(3, std::string_view(to_string(msg.role)));
    m.bind(4, msg.content).bind(5, std::string_view(to_string(msg.status)));
    m.bind(6, msg.stats_json).bind(7, msg.created_at);
    if (!m.step()) throw Error(ErrorCode::Internal, "importing a chat: no message id returned");
    new_id[msg.id] = m.int64(0);
    m.run();
  }
  if (chat.current_leaf != 0) {
    const auto it = new_id.find(chat.current_leaf);
    if (it == new_id.end())
      throw Error(ErrorCode::InvalidArgument, "importing a chat: the current message " +
                                                  std::to_string(chat.current_leaf) + " is not one of its messages");
    detail::write_one(db_, kWhat, "UPDATE chats SET current_leaf = ?2 WHERE id = ?1", chat_id, it->second);
  }
  tx.commit();
  return chat_id;
}

}  // namespace inferdesk::store
