// Exporting a chat: the branch the chat shows (root .. current leaf) with each reply's statistics,
// as Markdown (for people) or JSON (for programs). Files are written atomically (QSaveFile), so a
// failed export never leaves a half-written file in place of an older one.
#pragma once

#include <QByteArray>
#include <QString>

#include <vector>

#include "core/store/store.h"

namespace inferdesk::gui {

struct ChatExportInput {
  store::Chat chat;
  std::vector<store::Message> messages;  // root .. leaf
  QString modelName;                     // the loaded model, when known
};

// Markdown: "# Title", the system prompt, then "### User" / "### Assistant" sections with the
// content as written (it is already markdown) and a stats line under each reply.
QByteArray exportMarkdown(const ChatExportInput& in);

// JSON: {"format":"inferdesk-chat","version":1,"title",..,"system_prompt",..,"sampling":{..},
// "model",..,"exported_at",..,"messages":[{"id","parent_id","role","content","status",
// "created_at","stats":{..}}]}.
QByteArray exportJson(const ChatExportInput& in);

// Writes `data` to `path` atomically; false with a sentence in *error on failure.
bool writeExportFile(const QString& path, const QByteArray& data, QString* error);

// One line for a reply's stats JSON ("42 tokens · 31.5 tok/s · first token 120 ms · stop"); empty
// when the JSON holds nothing usable (it is untrusted text from the database).
QString formatReplyStats(const QString& statsJson);

}  // namespace inferdesk::gui
