#include "gui/hub/wizard/download_wizard.h"

#include "gui/hub/wizard/download_page.h"
#include "gui/hub/wizard/finish_page.h"
#include "gui/hub/wizard/fit_page.h"
#include "gui/hub/wizard/model_page.h"
#include "gui/hub/wizard/quantize_page.h"
#include "gui/hub/wizard/search_page.h"

namespace inferdesk::gui {

const RepoVariant* WizardState::chosenVariant() const {
  if (!overview || variant < 0 || variant >= static_cast<int>(overview->variants.size())) return nullptr;
  return &overview->variants[variant];
}

DownloadWizard::DownloadWizard(WizardServices services, QWidget* parent)
    : QWizard(parent), services_(std::move(services)) {
  setObjectName("downloadWizard");
  setWindowTitle(tr("Download a model"));
  setWizardStyle(QWizard::ClassicStyle);  // the same look on every desktop, and offscreen
  setOption(QWizard::NoBackButtonOnLastPage);
  search_ = new SearchPage(services_, state_);
  model_ = new ModelPage(services_, state_);
  fit_ = new FitPage(services_, state_);
  download_ = new DownloadPage(services_, state_);
  quantize_ = new QuantizePage(services_, state_);
  finish_ = new FinishPage(services_, state_);
  setPage(Search, search_);
  setPage(Model, model_);
  setPage(Fit, fit_);
  setPage(Download, download_);
  setPage(Quantize, quantize_);
  setPage(Finish, finish_);
  setStartId(Search);
  resize(760, 560);
}

void DownloadWizard::done(int result) {
  quantize_->cancelMeasure();  // closing the wizard stops an accuracy measurement
  if (result == QDialog::Accepted && finish_->showModelRequested() && services_.show_model && state_.model_id > 0)
    services_.show_model(state_.model_id);
  QWizard::done(result);
}

}  // namespace inferdesk::gui
