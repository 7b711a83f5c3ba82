#include "gui/chat/conversation_model.h"

#include <algorithm>
#include <exception>
#include <unordered_map>

#include "core/util/error.h"

#include "gui/chat/chat_export.h"

namespace inferdesk::gui {

namespace {

bool same_message(const store::Message& a, const store::Message& b) {
  return a.id == b.id && a.content == b.content && a.status == b.status && a.stats_json == b.stats_json;
}

}  // namespace

ConversationModel::ConversationModel(store::ChatStore& chats, QObject* parent)
    : QAbstractListModel(parent), chats_(chats) {}

int ConversationModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

QVariant ConversationModel::data(const QModelIndex& index, int role) const {
  const Row* r = index.isValid() && !index.parent().isValid() ? rowAt(index.row()) : nullptr;
  if (!r) return {};
  const store::Message& m = r->message;
  switch (role) {
    case Qt::DisplayRole:
    case ContentRole: return QString::fromStdString(m.content);
    case IdRole: return QVariant::fromValue<qint64>(m.id);
    case ParentIdRole: return QVariant::fromValue<qint64>(m.parent_id);
    case RoleNameRole: return QString(store::to_string(m.role));
    case StatusRole: return QString(store::to_string(m.status));
    case StatsJsonRole: return QString::fromStdString(m.stats_json);
    case StatsTextRole: return formatReplyStats(QString::fromStdString(m.stats_json));
    case SiblingIndexRole: return r->sibling_index;
    case SiblingCountRole: return static_cast<int>(r->siblings.size());
    case InContextRole: return out_of_context_.count(m.id) == 0;
    default: return {};
  }
}

QHash<int, QByteArray> ConversationModel::roleNames() const {
  QHash<int, QByteArray> names = QAbstractListModel::roleNames();
  names.insert({{IdRole, "messageId"},
                {ParentIdRole, "parentId"},
                {RoleNameRole, "role"},
                {ContentRole, "content"},
                {StatusRole, "status"},
                {StatsJsonRole, "statsJson"},
                {StatsTextRole, "statsText"},
                {SiblingIndexRole, "siblingIndex"},
                {SiblingCountRole, "siblingCount"},
                {InContextRole, "inContext"}});
  return names;
}

std::vector<ConversationModel::Row> ConversationModel::readPath() const {
  std::vector<Row> rows;
  if (chat_id_ == 0) return rows;
  const store::Chat chat = chats_.get_chat(chat_id_);
  if (chat.current_leaf == 0) return rows;
  // One query for the whole tree, then the path and each message's siblings in memory: a long
  // chat would otherwise cost two queries per message at every change.
  std::vector<store::Message> all = chats_.all_messages(chat_id_);
  std::unordered_map<std::int64_t, size_t> index;
  std::unordered_map<std::int64_t, std::vector<const store::Message*>> kids;  // by parent (0: roots)
  for (size_t i = 0; i < all.size(); ++i) {
    index[all[i].id] = i;
    kids[all[i].parent_id].push_back(&all[i]);
  }
  for (auto& [parent, list] : kids)  // the store's sibling order: oldest first, then by id
    std::sort(list.begin(), list.end(), [](const store::Message* a, const store::Message* b) {
      return a->created_at != b->created_at ? a->created_at < b->created_at : a->id < b->id;
    });
  std::vector<size_t> path;
  for (std::int64_t id = chat.current_leaf; id != 0;) {
    const auto it = index.find(id);
    if (it == index.end() || path.size() >= all.size())  // a dangling parent or a cycle in the file
      throw Error(ErrorCode::Format, "chat " + std::to_string(chat_id_) + " in the database has a broken message tree");
    path.push_back(it->second);
    id = all[it->second].parent_id;
  }
  for (auto p = path.rbegin(); p != path.rend(); ++p) {
    store::Message& m = all[*p];
    Row r;
    for (const store::Message* s : kids[m.parent_id]) r.siblings.push_back(s->id);
    r.sibling_index = static_cast<int>(std::find(r.siblings.begin(), r.siblings.end(), m.id) - r.siblings.begin());
    if (const auto live = live_.find(m.id); live != live_.end()) m.content = live->second;
    r.message = std::move(m);
    rows.push_back(std::move(r));
  }
  return rows;
}

void ConversationModel::setChat(std::int64_t chatId) {
  std::vector<Row> rows;
  const std::int64_t old_chat = chat_id_;
  chat_id_ = chatId;
  try {
    rows = readPath();
  } catch (const std::exception& e) {
    emit errorOccurred(QString("could not read the conversation: %1").arg(e.what()));
    rows.clear();
  }
  if (old_chat == chatId && rows.empty() && rows_.empty()) return;
  beginResetModel();
  rows_ = std::move(rows);
  out_of_context_.clear();
  endResetModel();
}

void ConversationModel::sync() {
  std::vector<Row> fresh;
  try {
    fresh = readPath();
  } catch (const std::exception& e) {
    emit errorOccurred(QString("could not read the conversation: %1").arg(e.what()));
    return;
  }
  size_t common = 0;
  while (common < rows_.size() && common < fresh.size() && rows_[common].message.id == fresh[common].message.id)
    ++common;
  if (common < rows_.size()) {
    beginRemoveRows({}, static_cast<int>(common), static_cast<int>(rows_.size()) - 1);
    rows_.erase(rows_.begin() + static_cast<std::ptrdiff_t>(common), rows_.end());
    endRemoveRows();
  }
  for (size_t i = 0; i < common; ++i) {
    Row& old = rows_[i];
    const bool changed = !same_message(old.message, fresh[i].message) || old.siblings != fresh[i].siblings ||
                         old.sibling_index != fresh[i].sibling_index;
    if (!changed) continue;
    old = std::move(fresh[i]);
    emitRowChanged(static_cast<int>(i));
  }
  if (common < fresh.size()) {
    beginInsertRows({}, static_cast<int>(common), static_cast<int>(fresh.size()) - 1);
    for (size_t i = common; i < fresh.size(); ++i) rows_.push_back(std::move(fresh[i]));
    endInsertRows();
  }
}

void ConversationModel::beginLive(std::int64_t messageId) {
  const int row = rowOf(messageId);
  live_[messageId] = row >= 0 ? rows_[static_cast<size_t>(row)].message.content : std::string();
}

void ConversationModel::appendText(std::int64_t messageId, const QString& text) {
  const auto live = live_.find(messageId);
  if (live == live_.end() || text.isEmpty()) return;
  const std::string utf8 = text.toStdString();
  live->second += utf8;
  const int row = rowOf(messageId);
  if (row < 0) return;
  rows_[static_cast<size_t>(row)].message.content += utf8;
  emitRowChanged(row, {Qt::DisplayRole, ContentRole});
}

void ConversationModel::endLive(std::int64_t messageId, bool refresh) {
  live_.erase(messageId);
  if (refresh) refreshMessage(messageId);
}

void ConversationModel::refreshMessage(std::int64_t messageId) {
  const int row = rowOf(messageId);
  if (row < 0) return;
  try {
    store::Message m = chats_.get_message(messageId);
    Row& r = rows_[static_cast<size_t>(row)];
    if (same_message(r.message, m)) return;
    r.message = std::move(m);
  } catch (const std::exception& e) {
    emit errorOccurred(QString("could not read a message: %1").arg(e.what()));
    return;
  }
  emitRowChanged(row);
}

void ConversationModel::setOutOfContext(const std::set<std::int64_t>& ids) {
  if (ids == out_of_context_) return;
  std::set<std::int64_t> touched = ids;
  touched.insert(out_of_context_.begin(), out_of_context_.end());
  out_of_context_ = ids;
  for (std::int64_t id : touched) {
    const int row = rowOf(id);
    if (row >= 0) emitRowChanged(row, {InContextRole});
  }
}

int ConversationModel::rowOf(std::int64_t messageId) const {
  for (size_t i = rows_.size(); i-- > 0;)  // streamed replies are at the end
    if (rows_[i].message.id == messageId) return static_cast<int>(i);
  return -1;
}

const ConversationModel::Row* ConversationModel::rowAt(int row) const {
  return row >= 0 && row < static_cast<int>(rows_.size()) ? &rows_[static_cast<size_t>(row)] : nullptr;
}

void ConversationModel::emitRowChanged(int row, const QList<int>& roles) {
  const QModelIndex i = index(row);
  emit dataChanged(i, i, roles);
}

}  // namespace inferdesk::gui
