#include "gui/hub/wizard/download_page.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QTreeView>
#include <QVBoxLayout>

#include "gui/hub/downloads_panel.h"
#include "gui/hub/hub_widgets.h"
#include "gui/hub/token_dialog.h"

namespace inferdesk::gui {

DownloadPage::DownloadPage(WizardServices& services, WizardState& state) : services_(services), state_(state) {
  setObjectName("downloadPage");
  setTitle(tr("Download"));
  setSubTitle(tr("Every file is checked against the Hub's SHA-256 before it counts as downloaded. Closing this "
                 "window does not stop the download: it goes on in Downloads (Ctrl+J)."));
  auto* layout = new QVBoxLayout(this);
  bar_ = new QProgressBar();
  bar_->setObjectName("downloadBar");
  bar_->setRange(0, 100);
  layout->addWidget(bar_);
  status_ = new QLabel();
  status_->setObjectName("downloadStatus");
  status_->setWordWrap(true);
  layout->addWidget(status_);
  files_ = new QTreeView();
  files_->setObjectName("downloadFiles");
  setup_downloads_view(files_, services_.downloads.model());
  files_->setRootIsDecorated(false);
  layout->addWidget(files_, 1);
  error_ = make_link_label("downloadPageError");
  layout->addWidget(error_);
  auto* row = new QHBoxLayout();
  pause_ = new QPushButton(tr("Pause"));
  resume_ = new QPushButton(tr("Resume"));
  cancel_ = new QPushButton(tr("Cancel download"));
  token_ = new QPushButton(tr("Enter token\u2026"));
  for (QPushButton* b : {pause_, resume_, cancel_, token_}) row->addWidget(b);
  row->addStretch(1);
  layout->addLayout(row);

  DownloadManager* m = services_.downloads.manager();
  connect(pause_, &QPushButton::clicked, this, [this, m] { m->pause(state_.download_id); });
  connect(resume_, &QPushButton::clicked, this, [this, m] { m->resume(state_.download_id); });
  connect(cancel_, &QPushButton::clicked, this, [this, m] { m->cancel(state_.download_id); });
  connect(token_, &QPushButton::clicked, this,
          [this] { TokenDialog::openFor(services_.vault, services_.hub.endpoint(), error_->text(), this); });
  auto mine = [this](int id) {
    if (id == state_.download_id) update();
  };
  connect(m, &DownloadManager::changed, this, mine);
  connect(m, &DownloadManager::fileChanged, this, mine);
  connect(m, &DownloadManager::filesReset, this, [this](int id) {
    if (id == state_.download_id) files_->setRootIndex(services_.downloads.model()->indexOf(id));
  });
}

void DownloadPage::initializePage() {
  const RepoVariant* v = state_.chosenVariant();
  if (!v || !state_.overview) return;
  DownloadManager* m = services_.downloads.manager();
  const DownloadEntry* current = m->entry(state_.download_id);
  // Back and Next again, or the same model chosen twice: the download already there goes on.
  if (!current || current->repo_id != state_.repo_id || current->status == DownloadStatus::Cancelled) {
    DownloadIntent intent;
    intent.variant = v->label;
    intent.add_to_models = true;
    state_.download_id = m->start(state_.repo_id, "main", state_.overview->root_filter, intent);
    state_.model_id = 0;
  }
  services_.downloads.select(state_.download_id);
  files_->setRootIndex(services_.downloads.model()->indexOf(state_.download_id));
  update();
}

void DownloadPage::update() {
  const DownloadEntry* e = services_.downloads.manager()->entry(state_.download_id);
  if (!e) return;
  const DownloadStatus s = e->status;
  bar_->setValue(e->total_bytes > 0 ? static_cast<int>(100 * e->bytesDone() / e->total_bytes) : 0);
  QString text = download_status_text(s) + " · " + format_progress(e->bytesDone(), e->total_bytes);
  if (s == DownloadStatus::Running) {
    if (const QString speed = format_speed(e->speed()); !speed.isEmpty()) text += " · " + speed;
    if (const QString eta = format_eta(e->eta()); !eta.isEmpty()) text += tr(" · %1 left").arg(eta);
  }
  if (s == DownloadStatus::Done && e->model_id > 0) text = tr("Downloaded and verified; added to your model list.");
  status_->setText(text);
  pause_->setEnabled(s == DownloadStatus::Running);
  resume_->setEnabled(s == DownloadStatus::Paused || s == DownloadStatus::Failed || s == DownloadStatus::Cancelled);
  resume_->setText(s == DownloadStatus::Paused ? tr("Resume") : tr("Retry"));
  cancel_->setEnabled(!is_final(s));
  QString error;
  if (s == DownloadStatus::Failed && e->failure) error = e->failure->html();
  if (s == DownloadStatus::Done && e->model_id == 0 && !e->model_error.isEmpty())
    error = e->model_error.toHtmlEscaped();
  error_->setText(error);
  token_->setVisible(s == DownloadStatus::Failed && e->failure && e->failure->needsToken());
  const qint64 before = state_.model_id;
  state_.model_id = s == DownloadStatus::Done ? e->model_id : 0;
  state_.model_dir = s == DownloadStatus::Done ? e->snapshot_dir : QString();
  if (before != state_.model_id) emit completeChanged();
}

bool DownloadPage::isComplete() const {
  const DownloadEntry* e = services_.downloads.manager()->entry(state_.download_id);
  return e && e->status == DownloadStatus::Done && e->model_id > 0;
}

}  // namespace inferdesk::gui
