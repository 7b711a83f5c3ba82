// The wizard's download step: asks the downloads panel to download the chosen variant (or finds
// the download already running for it) and shows that download's files from the panel's own item
// model (state, bytes, speed, time left), an overall bar, pause / resume / cancel, and the reason
// of a failure (a gated model: the link and "Enter token…"). Next waits until every file is
// verified and the folder is in the model list. Closing the wizard leaves the download running in
// the panel.
#pragma once

#include <QWizardPage>

#include "gui/hub/wizard/download_wizard.h"

class QLabel;
class QProgressBar;
class QPushButton;
class QTreeView;

namespace inferdesk::gui {

class DownloadPage : public QWizardPage {
  Q_OBJECT

 public:
  DownloadPage(WizardServices& services, WizardState& state);

  QTreeView* filesView() const { return files_; }
  QProgressBar* progressBar() const { return bar_; }
  QLabel* statusLabel() const { return status_; }
  QLabel* errorLabel() const { return error_; }
  QPushButton* pauseButton() const { return pause_; }
  QPushButton* resumeButton() const { return resume_; }
  QPushButton* cancelButton() const { return cancel_; }
  QPushButton* tokenButton() const { return token_; }
  int downloadId() const { return state_.download_id; }

  void initializePage() override;
  bool isComplete() const override;

 private:
  void update();

  WizardServices& services_;
  WizardState& state_;
  QTreeView* files_ = nullptr;
  QProgressBar* bar_ = nullptr;
  QLabel* status_ = nullptr;
  QLabel* error_ = nullptr;
  QPushButton* pause_ = nullptr;
  QPushButton* resume_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QPushButton* token_ = nullptr;
};

}  // namespace inferdesk::gui
