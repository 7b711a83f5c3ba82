// DownloadsModel: the downloads as a tree for views: one row per download (repository, variant,
// status, bytes, speed, ETA), its files as child rows (path, state, bytes, speed, ETA, the reason of
// a failure). KeePassXC-style, it translates DownloadManager's signals into row signals; it keeps
// its own count of each download's children so the rows it reports always match what it announced.
#pragma once

#include <QAbstractItemModel>

#include <vector>

#include "gui/hub/download_manager.h"

namespace inferdesk::gui {

class DownloadsModel : public QAbstractItemModel {
  Q_OBJECT

 public:
  enum Column { Name, State, Progress, Speed, Eta, ColumnCount };
  // Data roles beyond Qt's: the progress in percent (0..100) of a row, and a download's id.
  enum Role { PercentRole = Qt::UserRole + 1, DownloadIdRole };

  explicit DownloadsModel(DownloadManager& manager, QObject* parent = nullptr);

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

  // The download's row (its files are its children); invalid when absent.
  QModelIndex indexOf(int id, int column = 0) const;
  // The download a row (or one of its files) belongs to; 0 for none.
  int downloadId(const QModelIndex& index) const;

 private:
  QVariant downloadData(const DownloadEntry& e, int column, int role) const;
  QVariant fileData(const hub::FileProgress& f, int column, int role) const;
  void onFilesReset(int id);

  DownloadManager& manager_;
  std::vector<int> children_;  // per top-level row: the children announced
};

// "12.0 MiB of 40.0 MiB (30%)".
QString format_progress(qint64 done, qint64 total);

}  // namespace inferdesk::gui
