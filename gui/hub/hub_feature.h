// The Hub in the main window: the downloads panel docked at the bottom (hidden until a download
// starts or Ctrl+J), and the commands "Download a model…" (Ctrl+D: the wizard, one at a time),
// "Downloads" (Ctrl+J) and "Hugging Face token…". A finished download is added to the model list
// through ModelManager::addFolder; the wizard's Finish shows it on the Models page.
//
// The stored token is read the first time the Hub is used (not at start), so a locked keyring asks
// to be unlocked only by someone who downloads.
#pragma once

#include <QDockWidget>
#include <QObject>
#include <QPointer>

#include <functional>
#include <memory>

#include "core/hub/hub_env.h"
#include "gui/app/app_context.h"
#include "gui/hub/fit_check.h"
#include "gui/hub/token_vault.h"

class QAction;
class QMainWindow;

namespace inferdesk::gui {

class DownloadWizard;
class DownloadsPanel;
class HubService;
class ModelsPage;

struct HubFeatureOptions {
  hub::HubEnvironment env;                 // hub::read_hub_environment() in the app
  std::unique_ptr<SecretBackend> secret;   // make_keychain_backend() in the app; null: the file only
  std::function<MachineMemory()> machine;  // MachineMemory::probe when empty
};

// What the app passes: the process environment and the desktop's secret service.
HubFeatureOptions default_hub_feature_options();

class HubFeature : public QObject {
  Q_OBJECT

 public:
  HubFeature(QMainWindow& window, AppContext& ctx, ModelsPage* models, HubFeatureOptions options);
  ~HubFeature() override;

  HubService* hub() const { return hub_; }
  TokenVault* vault() const { return vault_; }
  DownloadsPanel* panel() const { return panel_; }
  QDockWidget* dock() const { return dock_; }
  QAction* downloadModelAction() const { return download_model_; }
  QAction* downloadsAction() const;
  QAction* tokenAction() const { return token_; }

  // Opens the wizard (or raises the open one).
  DownloadWizard* openWizard();
  void showToken();
  // The Models page with this model selected (and FP8 on load ticked when the wizard chose it).
  void showModel(qint64 id);

 private:
  void ensureTokenLoaded();

  QMainWindow& window_;
  AppContext& ctx_;
  ModelsPage* models_;
  std::function<MachineMemory()> machine_;
  HubService* hub_ = nullptr;
  TokenVault* vault_ = nullptr;
  DownloadsPanel* panel_ = nullptr;
  QPointer<QDockWidget> dock_;
  QAction* download_model_ = nullptr;
  QAction* token_ = nullptr;
  QPointer<DownloadWizard> wizard_;
  bool token_requested_ = false;
};

}  // namespace inferdesk::gui
