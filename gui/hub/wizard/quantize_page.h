// The wizard's optional quantize step. Only presets that exist are offered: loading the weights as
// published, and (for unquantized BF16/F16/F32 weights) FP8 on load, which core/engine does as the
// model loads (LoadOptions::quantization = Fp8). The choice is recorded for the model
// (load_preference.h); nothing is rewritten on disk.
#pragma once

#include <QWizardPage>

#include "gui/hub/wizard/download_wizard.h"

class QLabel;
class QRadioButton;

namespace inferdesk::gui {

class QuantizePage : public QWizardPage {
  Q_OBJECT

 public:
  QuantizePage(WizardServices& services, WizardState& state);

  QRadioButton* asPublishedButton() const { return as_published_; }
  QRadioButton* fp8Button() const { return fp8_; }

  void initializePage() override;
  bool validatePage() override;

 private:
  WizardServices& services_;
  WizardState& state_;
  QRadioButton* as_published_ = nullptr;
  QRadioButton* fp8_ = nullptr;
  QLabel* note_ = nullptr;
};

}  // namespace inferdesk::gui
