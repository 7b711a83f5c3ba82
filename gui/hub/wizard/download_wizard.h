// DownloadWizard: "Download a model…", one QWizardPage class per step (KeePassXC-style):
//   SearchPage    search the Hub (on a worker thread): downloads, likes, gated, supported or not
//   ModelPage     README summary, license, gated (token entry), architecture and support,
//                 parameters, the variants in the repository
//   FitPage       per variant and context length: fits on your GPU / in RAM only / does not fit
//   DownloadPage  per-file progress (state, bytes, speed, time left), pause / resume / cancel
//   QuantizePage  the presets that exist: load as published, or FP8 on load, with an accuracy
//                 report of FP8 measured on a worker thread (QuantReportRunner)
//   FinishPage    the model is in the model list, ready to load
// The download itself belongs to the downloads panel: closing the wizard leaves it running.
#pragma once

#include <QWizard>

#include <functional>
#include <optional>

#include "gui/hub/fit_check.h"
#include "gui/hub/repo_overview.h"

namespace inferdesk::store {
class Settings;
}

namespace inferdesk::gui {

class DownloadsPanel;
class HubService;
class TokenVault;

// What the wizard works with (owned by the app; they outlive it).
struct WizardServices {
  HubService& hub;
  TokenVault& vault;
  DownloadsPanel& downloads;
  store::Settings* settings = nullptr;     // where the quantize step's choice is recorded
  std::function<MachineMemory()> machine;  // MachineMemory::probe in the app
  std::function<void(qint64)> show_model;  // Finish: the Models page with this model selected
};

// The choices made so far, shared by the pages.
struct WizardState {
  QString repo_id;
  std::optional<RepoOverview> overview;
  int variant = -1;  // index into overview->variants
  int download_id = 0;
  qint64 model_id = 0;
  QString model_dir;  // the finished download's snapshot folder ("" until it is done)
  bool load_fp8 = false;
  const RepoVariant* chosenVariant() const;
};

class SearchPage;
class ModelPage;
class FitPage;
class DownloadPage;
class QuantizePage;
class FinishPage;

class DownloadWizard : public QWizard {
  Q_OBJECT

 public:
  enum PageId { Search, Model, Fit, Download, Quantize, Finish };

  explicit DownloadWizard(WizardServices services, QWidget* parent = nullptr);

  WizardState& state() { return state_; }
  SearchPage* searchPage() const { return search_; }
  ModelPage* modelPage() const { return model_; }
  FitPage* fitPage() const { return fit_; }
  DownloadPage* downloadPage() const { return download_; }
  QuantizePage* quantizePage() const { return quantize_; }
  FinishPage* finishPage() const { return finish_; }

 protected:
  void done(int result) override;

 private:
  WizardServices services_;
  WizardState state_;
  SearchPage* search_;
  ModelPage* model_;
  FitPage* fit_;
  DownloadPage* download_;
  QuantizePage* quantize_;
  FinishPage* finish_;
};

}  // namespace inferdesk::gui
