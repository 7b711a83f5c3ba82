// The gui/hub tests' fixture: the local Hub (tests/support/local_hub) on 127.0.0.1, a temporary HF
// cache and config folder given to HubService as its HubEnvironment (what HF_ENDPOINT and
// HF_HUB_CACHE would say), a token vault over a 0600 file in that folder (no secret service: the
// tests never touch the desktop's keyring), a model manager over a temporary database, and the
// downloads panel with the wizard's services, as HubFeature wires them in the app.
#pragma once

#include <QDir>
#include <QTemporaryDir>

#include <filesystem>
#include <memory>

#include "core/hub/hub_env.h"
#include "gui/hub/downloads_panel.h"
#include "gui/hub/hub_service.h"
#include "gui/hub/token_vault.h"
#include "gui/hub/wizard/download_wizard.h"
#include "gui/models/model_manager.h"
#include "tests/gui/support/gui_test_support.h"
#include "tests/support/local_hub/local_hub.h"

namespace inferdesk::gui::test {

inline hub::HubEnvironment local_env(const std::string& endpoint, const QString& dir) {
  hub::HubEnvironment e;
  e.hf_endpoint = endpoint;
  e.home = dir.toStdString();
  e.hf_home = (dir + "/hf").toStdString();
  e.hf_hub_cache = (dir + "/hf/hub").toStdString();
  e.xdg_config_home = (dir + "/config").toStdString();
  e.xdg_cache_home = (dir + "/cache").toStdString();
  return e;
}

struct HubFixture {
  inferdesk::test::LocalHub hub;
  QTemporaryDir dir;
  TempStores stores{nullptr};
  ModelManager models{*stores.ctx};
  HubService service{local_env(hub.url(), dir.path())};
  TokenVault vault{nullptr, make_file_backend(token_file())};
  DownloadsPanel panel{service, vault};
  MachineMemory machine;
  qint64 shown_model = 0;

  HubFixture() {
    // Retries within the test's patience: a fault costs tens of milliseconds, not seconds.
    hub::DownloadOptions o = service.downloadOptions();
    o.retry.initial_delay = std::chrono::milliseconds(50);
    o.retry.max_delay = std::chrono::milliseconds(200);
    o.progress_interval = std::chrono::milliseconds(50);
    service.setDownloadOptions(o);
    QObject::connect(&vault, &TokenVault::tokenChanged, &service, &HubService::setAppToken);
    panel.manager()->setAddModel([this](const QString& folder) { return models.addFolder(folder); });
    machine.gpu_usable = false;
    machine.gpu_reason = "no GPU in this test";
    machine.ram_available = qint64(8) << 30;
  }

  std::filesystem::path token_file() const { return std::filesystem::path(dir.path().toStdString()) / "hf-token"; }
  std::filesystem::path cache_dir() const { return service.cache().root(); }

  WizardServices services() {
    return WizardServices{service,
                          vault,
                          panel,
                          stores.settings.get(),
                          [this] { return machine; },
                          [this](qint64 id) { shown_model = id; }};
  }
};

}  // namespace inferdesk::gui::test
