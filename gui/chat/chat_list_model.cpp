#include "gui/chat/chat_list_model.h"

#include <QDateTime>

#include <algorithm>

#include <exception>

namespace inferdesk::gui {

ChatListModel::ChatListModel(store::ChatStore& chats, QObject* parent)
    : QAbstractListModel(parent), chats_(chats) {}

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
      return QString("%1\nlast changed %2")
          .arg(QString::fromStdString(c->title),
               QDateTime::fromMSecsSinceEpoch(c->updated_at).toString("yyyy-MM-dd hh:mm"));
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

void ChatListModel::reload() {
  std::vector<store::Chat> rows;
  try {
    rows = filter_.isEmpty() ? chats_.list_chats() : chats_.search_chats(filter_.toStdString());
  } catch (const std::exception& e) {
    emit errorOccurred(QString("could not read the chats: %1").arg(e.what()));
    return;
  }
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
  try {
    rows_[static_cast<size_t>(row)] = chats_.get_chat(id);
  } catch (const std::exception& e) {
    emit errorOccurred(QString("could not read the chat: %1").arg(e.what()));
    return;
  }
  if (row > 0) {
    beginMoveRows({}, row, row, {}, 0);
    std::rotate(rows_.begin(), rows_.begin() + row, rows_.begin() + row + 1);
    endMoveRows();
  }
  const QModelIndex top = index(0);
  emit dataChanged(top, top);
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
