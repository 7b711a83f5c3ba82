#include "gui/chat/chat_list_model.h"

#include <QDateTime>

#include <algorithm>

#include <exception>

namespace inferdesk::gui {

ChatListModel::ChatListModel(store::ChatStore& chats, QObject* parent) : QAbstractListModel(parent), chats_(chats) {}

int ChatListModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

QVariant ChatListModel::data(const QModelIndex& index, int role) const {
  const store::Chat* c = index.isValid() && !index.parent().isValid() ? chatAt(index.row()) : nullptr;
  if (!c) return {};
  switch (role) {
    case Qt::DisplayRole:
    case Qt::EditRole: {
      const QString title = QString::fromStdString(c->title);
      return title.isEmpty() && role == Qt::DisplayRole ? QString("Untitled chat") : title;
    }
    case Qt::ToolTipRole:
      return QString("%1\n%2 %3")
          .arg(QString::fromStdString(c->title), c->last_message_at ? QString("last message") : QString("created"),
               QDateTime::fromMSecsSinceEpoch(c->last_message_at ? c->last_message_at : c->created_at)
                   .toString("yyyy-MM-dd hh:mm"));
    case IdRole: return QVariant::fromValue<qint64>(c->id);
    case UpdatedAtRole: return QVariant::fromValue<qint64>(c->updated_at);
    default: return {};
  }
}

Qt::ItemFlags ChatListModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  return Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsEditable | Qt::ItemNeverHasChildren;
}

bool ChatListModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (role != Qt::EditRole || !index.isValid() || !chatAt(index.row())) return false;
  return renameChat(rows_[static_cast<size_t>(index.row())].id, value.toString());
}

bool ChatListModel::listedBefore(const store::Chat& a, const store::Chat& b) {
  const std::int64_t ka = a.last_message_at ? a.last_message_at : a.created_at;
  const std::int64_t kb = b.last_message_at ? b.last_message_at : b.created_at;
  return ka != kb ? ka > kb : a.id > b.id;
}

void ChatListModel::sortRows(std::vector<store::Chat>& rows) const {
  std::stable_sort(rows.begin(), rows.end(), &ChatListModel::listedBefore);
}

void ChatListModel::reload() {
  std::vector<store::Chat> rows;
  try {
    rows = filter_.isEmpty() ? chats_.list_chats() : chats_.search_chats(filter_.toStdString());
  } catch (const std::exception& e) {
    emit errorOccurred(QString("could not read the chats: %1").arg(e.what()));
    return;
  }
  sortRows(rows);
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

void ChatListModel::setFilter(const QString& text) {
  filter_ = text.trimmed();
  reload();
}

std::int64_t ChatListModel::createChat(const QString& title) {
  std::int64_t id = 0;
  store::Chat chat;
  try {
    id = chats_.create_chat(title.toStdString());
    chat = chats_.get_chat(id);
  } catch (const std::exception& e) {
    emit errorOccurred(QString("could not create a chat: %1").arg(e.what()));
    return 0;
  }
  beginInsertRows({}, 0, 0);
  rows_.insert(rows_.begin(), chat);
  endInsertRows();
  return id;
}

bool ChatListModel::renameChat(std::int64_t id, const QString& title) {
  const QString t = title.simplified();
  if (t.isEmpty()) return false;
  try {
    chats_.rename_chat(id, t.toStdString());
  } catch (const std::exception& e) {
    emit errorOccurred(QString("could not rename the chat: %1").arg(e.what()));
    return false;
  }
  chatTouched(id);
  return true;
}

bool ChatListModel::deleteChat(std::int64_t id) {
  try {
    chats_.delete_chat(id);
  } catch (const std::exception& e) {
    emit errorOccurred(QString("could not delete the chat: %1").arg(e.what()));
    return false;
  }
  const int row = rowOf(id);
  if (row >= 0) {
    beginRemoveRows({}, row, row);
    rows_.erase(rows_.begin() + row);
    endRemoveRows();
  }
  return true;
}

void ChatListModel::chatTouched(std::int64_t id) {
  const int row = rowOf(id);
  if (row < 0) return;
  store::Chat fresh;
  try {
    fresh = chats_.get_chat(id);
  } catch (const std::exception& e) {
    emit errorOccurred(QString("could not read the chat: %1").arg(e.what()));
    return;
  }
  const auto r = static_cast<size_t>(row);
  rows_[r] = std::move(fresh);
  // Where it belongs among the others (they keep their order).
  int target = 0;
  for (size_t i = 0; i < rows_.size(); ++i)
    if (i != r && listedBefore(rows_[i], rows_[r])) ++target;
  if (target != row) {
    beginMoveRows({}, row, row, {}, target > row ? target + 1 : target);
    if (target < row)
      std::rotate(rows_.begin() + target, rows_.begin() + row, rows_.begin() + row + 1);
    else
      std::rotate(rows_.begin() + row, rows_.begin() + row + 1, rows_.begin() + target + 1);
    endMoveRows();
  }
  const QModelIndex changed = index(target);
  emit dataChanged(changed, changed);
}

int ChatListModel::rowOf(std::int64_t id) const {
  for (size_t i = 0; i < rows_.size(); ++i)
    if (rows_[i].id == id) return static_cast<int>(i);
  return -1;
}

std::int64_t ChatListModel::idAt(int row) const {
  const store::Chat* c = chatAt(row);
  return c ? c->id : 0;
}

const store::Chat* ChatListModel::chatAt(int row) const {
  return row >= 0 && row < static_cast<int>(rows_.size()) ? &rows_[static_cast<size_t>(row)] : nullptr;
}

}  // namespace inferdesk::gui
