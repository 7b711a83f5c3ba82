// The chat list: one row per chat of store::ChatStore, the chat with the newest message first
// (a chat without messages counts from its creation), optionally filtered by a search text
// (title or any message). Renaming a chat or changing its settings never moves it: only a new
// message does, so the row under the mouse stays the chat the user means. Every change goes to the store first and is
// then reflected with the matching row signals (rowsInserted / rowsRemoved / rowsMoved /
// dataChanged); a new search is a model reset. Store failures (a read-only or full disk) never
// throw out of the model: they are reported through errorOccurred and the rows stay as they were.
#pragma once

#include <QAbstractListModel>

#include <cstdint>
#include <vector>

#include "core/store/store.h"

namespace inferdesk::gui {

class ChatListModel : public QAbstractListModel {
  Q_OBJECT

 public:
  enum Role { IdRole = Qt::UserRole + 1, UpdatedAtRole };

  explicit ChatListModel(store::ChatStore& chats, QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  // Editing the title (EditRole) renames the chat.
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

  // Re-reads the chats (model reset).
  void reload();
  // Shows only chats matching `text` (empty: all); a model reset.
  void setFilter(const QString& text);
  const QString& filter() const { return filter_; }

  // Creates a chat and inserts its row at the top; returns its id (0 on failure).
  std::int64_t createChat(const QString& title);
  bool renameChat(std::int64_t id, const QString& title);
  bool deleteChat(std::int64_t id);
  // The chat changed in the store: refreshes its row, and moves it where its newest message puts
  // it (a rename or a settings change leaves it where it is).
  void chatTouched(std::int64_t id);
  // The order of the list: newest activity first (last message, else creation), then newest id.
  static bool listedBefore(const store::Chat& a, const store::Chat& b);

  int rowOf(std::int64_t id) const;  // -1 when not shown
  std::int64_t idAt(int row) const;  // 0 when out of range
  const store::Chat* chatAt(int row) const;

 signals:
  void errorOccurred(const QString& message);

 private:
  void sortRows(std::vector<store::Chat>& rows) const;
  std::vector<store::Chat> rows_;
  store::ChatStore& chats_;
  QString filter_;
};

}  // namespace inferdesk::gui
