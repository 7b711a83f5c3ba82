// Importing a chat exported as JSON (chat_export.h, versions 1 and 2). The file is untrusted: it
// is parsed into a typed result whose error names the field and what is wrong with it ("message 7:
// parent 99 is not in the file"), never an exception or a crash, and the chat is written in one
// transaction (store::ChatStore::insert_chat), so a refused or failed import leaves nothing behind.
// A version 2 file comes back exactly as exported: every branch, the current leaf, titles,
// statuses, statistics, times, the system prompt and the sampling settings. A version 1 file (the
// branch shown only) becomes a chat of that one branch.
#pragma once

#include <QByteArray>
#include <QString>

#include <cstdint>
#include <vector>

#include "core/store/store.h"

namespace inferdesk::gui {

struct ParsedChat {
  store::Chat chat;                      // current_leaf in the file's numbering
  std::vector<store::Message> messages;  // parents before children, ids in the file's numbering
};

struct ChatImportResult {
  bool ok = false;
  std::int64_t chat_id = 0;  // the new chat
  int messages = 0;
  QString error;  // a sentence for the user when !ok
};

// The largest file and message count an import reads (far above any real chat).
inline constexpr qint64 kMaxImportBytes = qint64(256) << 20;
inline constexpr int kMaxImportMessages = 200000;

// Parses an export; false with *error (a sentence naming the problem) when it cannot be used.
// `now_ms` fills times the file lacks.
bool parseChatExport(const QByteArray& json, std::int64_t now_ms, ParsedChat* out, QString* error);

// Reads `path`, parses it and writes the chat to the store.
ChatImportResult importChatFile(store::ChatStore& chats, const QString& path, std::int64_t now_ms);
ChatImportResult importChatJson(store::ChatStore& chats, const QByteArray& json, std::int64_t now_ms);

}  // namespace inferdesk::gui
