#include "gui/hub/downloads_panel.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPushButton>
#include <QTreeView>
#include <QVBoxLayout>

#include "gui/hub/hub_service.h"
#include "gui/hub/hub_widgets.h"
#include "gui/hub/token_dialog.h"
#include "gui/hub/token_vault.h"

namespace inferdesk::gui {

DownloadsPanel::DownloadsPanel(HubService& hub, TokenVault& vault, QWidget* parent)
    : QWidget(parent), hub_(hub), vault_(vault), manager_(hub), model_(manager_) {
  setObjectName("downloadsPanel");
  buildUi();
  connect(view_->selectionModel(), &QItemSelectionModel::currentChanged, this, &DownloadsPanel::updateSelected);
  connect(&manager_, &DownloadManager::changed, this, [this](int id) {
    if (id == selectedId()) updateSelected();
  });
  connect(&manager_, &DownloadManager::added, this, [this](int id) {
    if (selectedId() == 0) select(id);
  });
  // A token entered anywhere (here, the wizard) restarts what failed for want of one.
  connect(&hub_, &HubService::tokenChanged, &manager_, &DownloadManager::retryTokenFailures);
  connect(pause_, &QPushButton::clicked, this, [this] { manager_.pause(selectedId()); });
  connect(resume_, &QPushButton::clicked, this, [this] { manager_.resume(selectedId()); });
  connect(cancel_, &QPushButton::clicked, this, [this] { manager_.cancel(selectedId()); });
  connect(remove_, &QPushButton::clicked, this, [this] {
    manager_.remove(selectedId());
    updateSelected();
  });
  connect(token_, &QPushButton::clicked, this, &DownloadsPanel::enterToken);
  connect(show_model_, &QPushButton::clicked, this, [this] {
    const DownloadEntry* e = manager_.entry(selectedId());
    if (e && e->model_id > 0 && show_model_fn_) show_model_fn_(e->model_id);
  });
  updateSelected();
}

void DownloadsPanel::buildUi() {
  auto* layout = new QVBoxLayout(this);
  view_ = new QTreeView();
  view_->setObjectName("downloadsView");
  setup_downloads_view(view_, &model_);
  view_->setAlternatingRowColors(true);
  layout->addWidget(view_, 1);
  // Rich text with the gated model's link; opened by the desktop's browser.
  error_ = make_link_label("downloadError");
  error_->hide();
  layout->addWidget(error_);
  auto* row = new QHBoxLayout();
  pause_ = new QPushButton(tr("Pause"));
  resume_ = new QPushButton(tr("Resume"));
  cancel_ = new QPushButton(tr("Cancel"));
  remove_ = new QPushButton(tr("Remove from list"));
  token_ = new QPushButton(tr("Enter token\u2026"));
  token_->setObjectName("enterTokenButton");
  show_model_ = new QPushButton(tr("Show in Models"));
  for (QPushButton* b : {pause_, resume_, cancel_, remove_, token_, show_model_}) row->addWidget(b);
  row->addStretch(1);
  layout->addLayout(row);
}

void DownloadsPanel::select(int id) {
  const QModelIndex index = model_.indexOf(id);
  if (!index.isValid()) return;
  view_->setCurrentIndex(index);
  view_->expand(index);
  updateSelected();
}

int DownloadsPanel::selectedId() const { return model_.downloadId(view_->currentIndex()); }

void DownloadsPanel::updateSelected() {
  const DownloadEntry* e = manager_.entry(selectedId());
  const DownloadStatus s = e ? e->status : DownloadStatus::Done;
  pause_->setEnabled(e && s == DownloadStatus::Running);
  resume_->setEnabled(e &&
                      (s == DownloadStatus::Paused || s == DownloadStatus::Failed || s == DownloadStatus::Cancelled));
  resume_->setText(e && s != DownloadStatus::Paused ? tr("Retry") : tr("Resume"));
  cancel_->setEnabled(e && !is_final(s));
  remove_->setEnabled(e && is_final(s));
  show_model_->setEnabled(e && e->model_id > 0);
  const bool failed = e && s == DownloadStatus::Failed && e->failure;
  token_->setVisible(!failed || e->failure->needsToken());
  QString text;
  if (failed)
    text = e->failure->html();
  else if (e && s == DownloadStatus::Done && !e->model_error.isEmpty())
    text = e->model_error.toHtmlEscaped();
  error_->setText(text);
  error_->setVisible(!text.isEmpty());
}

void DownloadsPanel::enterToken() {
  const DownloadEntry* e = manager_.entry(selectedId());
  const QString context = e && e->failure && e->failure->needsToken() ? e->failure->html() : QString();
  TokenDialog::openFor(vault_, hub_.endpoint(), context, this);
}

}  // namespace inferdesk::gui
