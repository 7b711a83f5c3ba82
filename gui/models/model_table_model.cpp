#include "gui/models/model_table_model.h"

namespace inferdesk::gui {

ModelTableModel::ModelTableModel(QObject* parent) : QAbstractTableModel(parent) {}

int ModelTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int ModelTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ModelTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Name: return tr("Model");
    case Architecture: return tr("Architecture");
    case Parameters: return tr("Parameters");
    case ActiveParameters: return tr("Active / token");
    case DType: return tr("DType");
    case Context: return tr("Context");
    case SizeOnDisk: return tr("On disk");
    case ChatTemplate: return tr("Chat template");
    case State: return tr("Status");
    default: return {};
  }
}

QVariant ModelTableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const ModelRow& r = rows_[static_cast<size_t>(index.row())];
  if (role == IdRole) return r.id;
  if (role == PathRole) return r.path;
  if (role == Qt::ToolTipRole) return r.path;
  if (role == Qt::TextAlignmentRole) {
    const bool numeric = index.column() == Parameters || index.column() == ActiveParameters ||
                         index.column() == Context || index.column() == SizeOnDisk;
    return QVariant::fromValue(
        Qt::Alignment(numeric ? Qt::AlignRight | Qt::AlignVCenter : Qt::AlignLeft | Qt::AlignVCenter));
  }
  if (role != Qt::DisplayRole) return {};
  if (index.column() == Name) return r.display_name;
  if (index.column() == State) return r.state;
  if (!r.facts) return index.column() == Architecture ? tr("(unknown: re-add the folder)") : QVariant();
  const ModelFacts& f = *r.facts;
  switch (index.column()) {
    case Architecture: return f.model_type;
    case Parameters: return format_count(f.params_total);
    case ActiveParameters: return f.is_moe() ? format_count(f.params_active) : tr("all");
    case DType: return f.dtype;
    case Context: return QString::number(f.context_length);
    case SizeOnDisk: return format_bytes(f.size_on_disk);
    case ChatTemplate: return chatTemplateWords(f, tr("no"));
    default: return {};
  }
}

void ModelTableModel::setRows(std::vector<ModelRow> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

int ModelTableModel::rowOf(qint64 id) const {
  for (size_t i = 0; i < rows_.size(); ++i)
    if (rows_[i].id == id) return static_cast<int>(i);
  return -1;
}

const ModelRow* ModelTableModel::rowAt(int row) const {
  return row >= 0 && row < rowCount() ? &rows_[static_cast<size_t>(row)] : nullptr;
}

const ModelRow* ModelTableModel::find(qint64 id) const { return rowAt(rowOf(id)); }

void ModelTableModel::upsert(const ModelRow& row) {
  const int at = rowOf(row.id);
  if (at >= 0) {
    const QString state = rows_[static_cast<size_t>(at)].state;
    rows_[static_cast<size_t>(at)] = row;
    rows_[static_cast<size_t>(at)].state = state;
    emit dataChanged(index(at, 0), index(at, ColumnCount - 1));
    return;
  }
  const int n = rowCount();
  beginInsertRows({}, n, n);
  rows_.push_back(row);
  endInsertRows();
}

void ModelTableModel::remove(qint64 id) {
  const int at = rowOf(id);
  if (at < 0) return;
  beginRemoveRows({}, at, at);
  rows_.erase(rows_.begin() + at);
  endRemoveRows();
}

void ModelTableModel::setState(qint64 id, const QString& state, bool exclusive) {
  for (size_t i = 0; i < rows_.size(); ++i) {
    QString next = rows_[i].state;
    if (rows_[i].id == id)
      next = state;
    else if (exclusive)
      next.clear();
    if (next == rows_[i].state) continue;
    rows_[i].state = next;
    const QModelIndex cell = index(static_cast<int>(i), State);
    emit dataChanged(cell, cell, {Qt::DisplayRole});
  }
}

void ModelTableModel::clearStates() { setState(0, {}, true); }

}  // namespace inferdesk::gui
