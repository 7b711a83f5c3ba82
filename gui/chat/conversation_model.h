// The conversation the chat page shows: one row per message on the path root → current leaf of
// one chat's message tree (store::ChatStore), with each message's place among its siblings (for
// "‹ 2/3 ›" navigation) and its reply statistics. The store is the truth: after the store changes
// (a message added, the current leaf moved) sync() compares the new path with the rows and emits
// the smallest row changes (rows removed after the common prefix, rows inserted, dataChanged where
// sibling counts moved); streamed text is appended with appendText (dataChanged on one row) and
// kept in memory while the reply is live, so a sync never shows less than has arrived.
// Store failures are reported through errorOccurred, never thrown out of the model.
#pragma once

#include <QAbstractListModel>

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "core/store/store.h"

namespace inferdesk::gui {

class ConversationModel : public QAbstractListModel {
  Q_OBJECT

 public:
  enum Role {
    IdRole = Qt::UserRole + 1,
    ParentIdRole,
    RoleNameRole,      // "system" / "user" / "assistant"
    ContentRole,       // the markdown text (also DisplayRole)
    StatusRole,        // "complete" / "streaming" / "stopped" / "error"
    StatsJsonRole,     // the reply's stats JSON as stored
    StatsTextRole,     // one line: tokens, tok/s, time to first token, finish reason
    SiblingIndexRole,  // 0-based position among the messages sharing its parent
    SiblingCountRole,
    InContextRole,  // false when the last request left this message out of the prompt
  };

  struct Row {
    store::Message message;
    std::vector<std::int64_t> siblings;  // ids, oldest first (always contains the message)
    int sibling_index = 0;
  };

  explicit ConversationModel(store::ChatStore& chats, QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QHash<int, QByteArray> roleNames() const override;

  // Shows another chat (0: none); a model reset.
  void setChat(std::int64_t chatId);
  std::int64_t chatId() const { return chat_id_; }
  // Re-reads the chat's current path and applies the difference as row signals.
  void sync();
  // Streaming replies: their text is kept in memory (the store may be a batch or two behind,
  // see reply_writer.h) and shown instead of the stored text until endLive.
  void beginLive(std::int64_t messageId);
  // Appends streamed text to a live message (shown or not).
  void appendText(std::int64_t messageId, const QString& text);
  // The store has the whole reply now: forget the memory copy and re-read it when `refresh`.
  void endLive(std::int64_t messageId, bool refresh = true);
  // Re-reads one shown message (status, stats, content) from the store.
  void refreshMessage(std::int64_t messageId);
  // Marks which shown messages the last request left out of the prompt (others are in context).
  void setOutOfContext(const std::set<std::int64_t>& ids);

  int rowOf(std::int64_t messageId) const;  // -1 when not shown
  const Row* rowAt(int row) const;
  std::int64_t leafId() const { return rows_.empty() ? 0 : rows_.back().message.id; }
  const std::vector<Row>& rows() const { return rows_; }

 signals:
  void errorOccurred(const QString& message);

 private:
  std::vector<Row> readPath() const;  // throws inferdesk::Error
  void emitRowChanged(int row, const QList<int>& roles = {});

  store::ChatStore& chats_;
  std::int64_t chat_id_ = 0;
  std::vector<Row> rows_;
  std::set<std::int64_t> out_of_context_;
  std::map<std::int64_t, std::string> live_;  // message id -> text streamed so far
};

}  // namespace inferdesk::gui
