// Exporting a chat. JSON (for programs, and for importing again: chat_import.h) holds the whole
// message tree: every branch, ids, parents, the current leaf, each reply's statistics, the
// sampling settings, the system prompt and the model. Markdown (for people) holds the branch the
// chat shows and says how many other versions it leaves out, or every branch, each message
// labelled with its version. Files are written atomically (QSaveFile), so a failed export never
// leaves a half-written file in place of an older one.
#pragma once

#include <QByteArray>
#include <QString>

#include <vector>

#include "core/store/store.h"

namespace inferdesk::gui {

struct ChatExportInput {
  store::Chat chat;
  std::vector<store::Message> messages;  // the branch shown: root .. current leaf
  std::vector<store::Message> all;       // every message of the chat (any order)
  QString modelName;                     // the loaded model, when known
};

// The chat as stored, ready to export (flushes nothing: callers commit streamed text first).
// Throws inferdesk::Error when the store cannot be read.
ChatExportInput readChatForExport(const store::ChatStore& chats, std::int64_t chatId, const QString& modelName);

// Markdown of the branch shown: "# Title", the system prompt, "### User" / "### Assistant"
// sections with the content as written (it is already markdown) and a stats line under each
// reply; a note says how many versions of other branches are not included.
QByteArray exportMarkdown(const ChatExportInput& in);

// Markdown of every branch: the tree depth first (each message after its parent, versions in the
// order they were written), a message with siblings headed "version i of n".
QByteArray exportMarkdownAllBranches(const ChatExportInput& in);

// JSON version 2: {"format":"inferdesk-chat","version":2,"title","system_prompt","sampling":{..},
// "model","created_at","updated_at","exported_at","current_leaf":id,"messages":[{"id",
// "parent_id","role","content","status","created_at","stats":{..}}]} with every message, parents
// before children. Times are UTC ISO 8601 with milliseconds.
QByteArray exportJson(const ChatExportInput& in);

// Writes `data` to `path` atomically; false with a sentence in *error on failure.
bool writeExportFile(const QString& path, const QByteArray& data, QString* error);

// One line for a reply's stats JSON ("42 tokens · 31.5 tok/s · first token 120 ms · stop"); empty
// when the JSON holds nothing usable (it is untrusted text from the database).
QString formatReplyStats(const QString& statsJson);

}  // namespace inferdesk::gui
