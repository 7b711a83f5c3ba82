#include "gui/hub/hub_feature.h"

#include <QAction>
#include <QCheckBox>
#include <QDockWidget>
#include <QMainWindow>
#include <QStatusBar>

#include "core/hub/token_store.h"
#include "gui/hub/downloads_panel.h"
#include "gui/hub/hub_service.h"
#include "gui/hub/load_preference.h"
#include "gui/hub/token_dialog.h"
#include "gui/hub/wizard/download_wizard.h"
#include "gui/models/models_page.h"

namespace inferdesk::gui {

HubFeatureOptions default_hub_feature_options() {
  HubFeatureOptions o;
  o.env = hub::read_hub_environment();
  o.secret = make_keychain_backend();
  return o;
}

HubFeature::HubFeature(QMainWindow& window, AppContext& ctx, ModelsPage* models, HubFeatureOptions options)
    : QObject(&window), window_(window), ctx_(ctx), models_(models), machine_(std::move(options.machine)) {
  setObjectName("hubFeature");
  const auto token_file = hub::default_token_store_path(options.env);
  hub_ = new HubService(std::move(options.env), this);
  vault_ = new TokenVault(std::move(options.secret), make_file_backend(token_file), this);
  connect(vault_, &TokenVault::tokenChanged, hub_, &HubService::setAppToken);

  dock_ = new QDockWidget(tr("Downloads"), &window_);
  dock_->setObjectName("downloadsDock");
  panel_ = new DownloadsPanel(*hub_, *vault_, dock_);
  dock_->setWidget(panel_);
  window_.addDockWidget(Qt::BottomDockWidgetArea, dock_);
  dock_->hide();
  if (models_) {
    ModelManager* manager = models_->manager();
    panel_->manager()->setAddModel([manager](const QString& folder) { return manager->addFolder(folder); });
    panel_->setShowModel([this](qint64 id) { showModel(id); });
  }
  // A download that starts is shown; one that finishes says so in the status bar.
  connect(panel_->manager(), &DownloadManager::added, dock_, [this] { dock_->show(); });
  connect(panel_->manager(), &DownloadManager::finished, this, [this](int id) {
    const DownloadEntry* e = panel_->manager()->entry(id);
    if (!e) return;
    window_.statusBar()->showMessage(tr("Download of %1: %2").arg(e->repo_id, download_status_text(e->status)), 15000);
  });

  download_model_ = new QAction(tr("&Download a model\u2026"), this);
  download_model_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_D));
  download_model_->setObjectName("downloadModelAction");
  window_.addAction(download_model_);
  connect(download_model_, &QAction::triggered, this, [this] { openWizard(); });
  QAction* toggle = dock_->toggleViewAction();
  toggle->setText(tr("&Downloads"));
  toggle->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_J));
  window_.addAction(toggle);
  token_ = new QAction(tr("Hugging Face &token\u2026"), this);
  window_.addAction(token_);
  connect(token_, &QAction::triggered, this, &HubFeature::showToken);
  connect(dock_, &QDockWidget::visibilityChanged, this, [this](bool shown) {
    if (shown) ensureTokenLoaded();
  });
}

// The wizard and the panel (with the downloads) use the Hub service and the vault, which are this
// object's children: they go first.
HubFeature::~HubFeature() {
  delete wizard_.data();
  delete dock_.data();
}

QAction* HubFeature::downloadsAction() const { return dock_->toggleViewAction(); }

void HubFeature::ensureTokenLoaded() {
  if (token_requested_) return;
  token_requested_ = true;
  vault_->load();
}

DownloadWizard* HubFeature::openWizard() {
  ensureTokenLoaded();
  if (!wizard_) {
    WizardServices services{*hub_, *vault_, *panel_, &ctx_.settings, machine_, nullptr};
    if (models_) services.show_model = [this](qint64 id) { showModel(id); };
    wizard_ = new DownloadWizard(std::move(services), &window_);
    wizard_->setAttribute(Qt::WA_DeleteOnClose);
  }
  wizard_->show();
  wizard_->raise();
  wizard_->activateWindow();
  return wizard_;
}

void HubFeature::showModel(qint64 id) {
  if (!models_) return;
  if (ctx_.show_page) ctx_.show_page(Page::Models);
  if (!models_->selectModel(id)) return;
  // The quantize step's choice, in the load form.
  const LoadQuantization q = load_quantization(ctx_.settings, id);
  if (q != LoadQuantization::None) models_->preferQuantization(q);
}

void HubFeature::showToken() {
  ensureTokenLoaded();
  TokenDialog::openFor(*vault_, hub_->endpoint(), QString(), &window_);
}

}  // namespace inferdesk::gui
