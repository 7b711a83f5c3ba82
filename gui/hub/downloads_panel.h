// DownloadsPanel: every download of this session, running and finished, with its files (state,
// bytes, speed, time left), pause / resume / cancel, and the reason of a failure: for a gated model
// the message with the link where access is requested and an "Enter token…" button; once a token is
// saved, downloads that failed for want of one start again. The panel owns the DownloadManager (and
// so every SnapshotDownload): the wizard only asks it to start one, so closing the wizard does not
// stop a download.
#pragma once

#include <QWidget>

#include <functional>

#include "gui/hub/download_manager.h"
#include "gui/hub/downloads_model.h"

class QLabel;
class QPushButton;
class QTreeView;

namespace inferdesk::gui {

class HubService;
class TokenVault;

class DownloadsPanel : public QWidget {
  Q_OBJECT

 public:
  DownloadsPanel(HubService& hub, TokenVault& vault, QWidget* parent = nullptr);

  DownloadManager* manager() { return &manager_; }
  DownloadsModel* model() { return &model_; }
  QTreeView* view() const { return view_; }
  QPushButton* pauseButton() const { return pause_; }
  QPushButton* resumeButton() const { return resume_; }
  QPushButton* cancelButton() const { return cancel_; }
  QPushButton* removeButton() const { return remove_; }
  QPushButton* tokenButton() const { return token_; }
  QPushButton* showModelButton() const { return show_model_; }
  QLabel* errorLabel() const { return error_; }

  // What "Show in Models" does with a finished download's model id (the main window's page switch).
  void setShowModel(std::function<void(qint64)> show) { show_model_fn_ = std::move(show); }
  // Selects a download's row (the wizard hands over the one it started).
  void select(int id);
  int selectedId() const;

 public slots:
  // The token dialog, with the selected download's failure as its context.
  void enterToken();

 private:
  void buildUi();
  void updateSelected();

  HubService& hub_;
  TokenVault& vault_;
  DownloadManager manager_;
  DownloadsModel model_;
  QTreeView* view_ = nullptr;
  QLabel* error_ = nullptr;
  QPushButton* pause_ = nullptr;
  QPushButton* resume_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QPushButton* remove_ = nullptr;
  QPushButton* token_ = nullptr;
  QPushButton* show_model_ = nullptr;
  std::function<void(qint64)> show_model_fn_;
};

}  // namespace inferdesk::gui
