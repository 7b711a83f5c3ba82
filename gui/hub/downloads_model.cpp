#include "gui/hub/downloads_model.h"

#include "gui/models/model_facts.h"

namespace inferdesk::gui {

namespace {

// Internal ids: 0 for a download row, else 1 + the download's top-level row for its files.
constexpr quintptr kTop = 0;

int percent(qint64 done, qint64 total) {
  return total > 0 ? static_cast<int>(std::min<qint64>(100, 100 * done / total)) : 0;
}

}  // namespace

QString format_progress(qint64 done, qint64 total) {
  if (total <= 0) return format_bytes(done);
  return QObject::tr("%1 of %2 (%3%)").arg(format_bytes(done), format_bytes(total)).arg(percent(done, total));
}

DownloadsModel::DownloadsModel(DownloadManager& manager, QObject* parent)
    : QAbstractItemModel(parent), manager_(manager) {
  for (int id : manager_.ids()) children_.push_back(static_cast<int>(manager_.entry(id)->files.size()));
  connect(&manager_, &DownloadManager::added, this, [this](int id) {
    const int row = manager_.indexOf(id);
    beginInsertRows({}, row, row);
    children_.insert(children_.begin() + row, 0);
    endInsertRows();
  });
  connect(&manager_, &DownloadManager::aboutToRemove, this, [this](int id) {
    const int row = manager_.indexOf(id);
    beginRemoveRows({}, row, row);
    children_.erase(children_.begin() + row);
  });
  connect(&manager_, &DownloadManager::removed, this, [this] { endRemoveRows(); });
  connect(&manager_, &DownloadManager::filesReset, this, &DownloadsModel::onFilesReset);
  connect(&manager_, &DownloadManager::changed, this,
          [this](int id) { emit dataChanged(indexOf(id, 0), indexOf(id, ColumnCount - 1)); });
  connect(&manager_, &DownloadManager::fileChanged, this, [this](int id, int file) {
    const QModelIndex parent = indexOf(id);
    if (!parent.isValid() || file >= children_[parent.row()]) return;
    emit dataChanged(index(file, 0, parent), index(file, ColumnCount - 1, parent));
    emit dataChanged(indexOf(id, 0), indexOf(id, ColumnCount - 1));  // the totals moved too
  });
}

void DownloadsModel::onFilesReset(int id) {
  const QModelIndex parent = indexOf(id);
  if (!parent.isValid()) return;
  const int row = parent.row();
  if (children_[row] > 0) {
    beginRemoveRows(parent, 0, children_[row] - 1);
    children_[row] = 0;
    endRemoveRows();
  }
  const int n = static_cast<int>(manager_.entry(id)->files.size());
  if (n > 0) {
    beginInsertRows(parent, 0, n - 1);
    children_[row] = n;
    endInsertRows();
  }
}

QModelIndex DownloadsModel::index(int row, int column, const QModelIndex& parent) const {
  if (row < 0 || column < 0 || column >= ColumnCount) return {};
  if (!parent.isValid())
    return row < static_cast<int>(children_.size()) ? createIndex(row, column, kTop) : QModelIndex();
  if (parent.internalId() != kTop || row >= children_[parent.row()]) return {};
  return createIndex(row, column, static_cast<quintptr>(parent.row() + 1));
}

QModelIndex DownloadsModel::parent(const QModelIndex& child) const {
  if (!child.isValid() || child.internalId() == kTop) return {};
  return createIndex(static_cast<int>(child.internalId() - 1), 0, kTop);
}

int DownloadsModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return static_cast<int>(children_.size());
  if (parent.internalId() != kTop || parent.column() != 0) return 0;
  return children_[parent.row()];
}

int DownloadsModel::columnCount(const QModelIndex&) const { return ColumnCount; }

QModelIndex DownloadsModel::indexOf(int id, int column) const {
  const int row = manager_.indexOf(id);
  return row < 0 ? QModelIndex() : index(row, column);
}

int DownloadsModel::downloadId(const QModelIndex& index) const {
  if (!index.isValid()) return 0;
  const int row = index.internalId() == kTop ? index.row() : static_cast<int>(index.internalId() - 1);
  const QList<int> ids = manager_.ids();
  return row < ids.size() ? ids[row] : 0;
}

QVariant DownloadsModel::data(const QModelIndex& index, int role) const {
  const DownloadEntry* e = manager_.entry(downloadId(index));
  if (!e) return {};
  if (role == DownloadIdRole) return e->id;
  if (index.internalId() == kTop) return downloadData(*e, index.column(), role);
  if (index.row() >= static_cast<int>(e->files.size())) return {};
  return fileData(e->files[index.row()], index.column(), role);
}

QVariant DownloadsModel::downloadData(const DownloadEntry& e, int column, int role) const {
  if (role == PercentRole) return percent(e.bytesDone(), e.total_bytes);
  if (role == Qt::ToolTipRole) return e.failure ? e.failure->message : e.snapshot_dir;
  if (role != Qt::DisplayRole) return {};
  switch (column) {
    case Name:
      return e.intent.variant.isEmpty() ? e.repo_id : QStringLiteral("%1 · %2").arg(e.repo_id, e.intent.variant);
    case State: return download_status_text(e.status);
    case Progress: return format_progress(e.bytesDone(), e.total_bytes);
    case Speed: return e.status == DownloadStatus::Running ? format_speed(e.speed()) : QString();
    case Eta: return format_eta(e.eta());
    default: return {};
  }
}

QVariant DownloadsModel::fileData(const hub::FileProgress& f, int column, int role) const {
  if (role == PercentRole) return percent(f.bytes_done, f.size);
  if (role == Qt::ToolTipRole) return QString::fromStdString(f.message);
  if (role != Qt::DisplayRole) return {};
  switch (column) {
    case Name: return QString::fromStdString(f.path);
    case State: {
      QString s = QString::fromLatin1(hub::to_string(f.state));
      if (f.from_cache) s += tr(" (in the cache)");
      if (!f.message.empty()) s += QStringLiteral(": ") + QString::fromStdString(f.message);
      return s;
    }
    case Progress: return format_progress(f.bytes_done, f.size);
    case Speed: return f.state == hub::FileState::Downloading ? format_speed(f.speed_bytes_per_s) : QString();
    case Eta: return f.state == hub::FileState::Downloading ? format_eta(f.eta_s) : QString();
    default: return {};
  }
}

QVariant DownloadsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Name: return tr("Download");
    case State: return tr("State");
    case Progress: return tr("Bytes");
    case Speed: return tr("Speed");
    case Eta: return tr("Time left");
    default: return {};
  }
}

}  // namespace inferdesk::gui
