#include "gui/hub/wizard/quantize_page.h"

#include <QLabel>
#include <QMessageBox>
#include <QRadioButton>
#include <QVBoxLayout>

#include <exception>

#include "gui/hub/load_preference.h"

namespace inferdesk::gui {

QuantizePage::QuantizePage(WizardServices& services, WizardState& state) : services_(services), state_(state) {
  setObjectName("quantizePage");
  setTitle(tr("Quantize (optional)"));
  setSubTitle(tr("How InferDesk should load the weights."));
  auto* layout = new QVBoxLayout(this);
  as_published_ = new QRadioButton();
  as_published_->setObjectName("asPublished");
  fp8_ = new QRadioButton(tr("Quantize to FP8 when loading: the projections take one byte per parameter, about "
                             "half the GPU memory of BF16, with a small loss of accuracy"));
  fp8_->setObjectName("fp8OnLoad");
  note_ = new QLabel();
  note_->setWordWrap(true);
  layout->addWidget(as_published_);
  layout->addWidget(fp8_);
  layout->addWidget(note_);
  layout->addStretch(1);
}

void QuantizePage::initializePage() {
  const RepoVariant* v = state_.chosenVariant();
  const RepoVariant* root = state_.overview ? state_.overview->rootVariant() : nullptr;
  const bool unquantized = root && root->format == VariantFormat::Unquantized;
  as_published_->setText(tr("Load as published (%1)").arg(root ? root->label : tr("as downloaded")));
  fp8_->setVisible(unquantized);
  note_->setText(
      unquantized
          ? QString()
          : tr("These weights are already quantized (%1): they load as they are.").arg(root ? root->label : QString()));
  (v && v->quantize_on_load && unquantized ? fp8_ : as_published_)->setChecked(true);
}

bool QuantizePage::validatePage() {
  state_.load_fp8 = !fp8_->isHidden() && fp8_->isChecked();
  if (!services_.settings || state_.model_id <= 0) return true;
  try {
    set_load_quantization(*services_.settings, state_.model_id,
                          state_.load_fp8 ? LoadQuantization::Fp8 : LoadQuantization::None);
  } catch (const std::exception& e) {
    QMessageBox::warning(this, tr("Quantize"), tr("Could not record the choice: %1").arg(e.what()));
    return false;
  }
  return true;
}

}  // namespace inferdesk::gui
