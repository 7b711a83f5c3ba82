// The wizard's optional quantize step. Only presets that exist are offered: loading the weights as
// published, and (for unquantized BF16/F16/F32 weights) FP8 on load, which core/engine does as the
// model loads (LoadOptions::quantization = Fp8). The choice is recorded for the model
// (load_preference.h); nothing is rewritten on disk. With FP8 chosen and the download finished,
// "Measure accuracy" runs the accuracy report (quant_report.h) on a worker thread with a progress
// bar and Cancel: perplexity and KL divergence against the model as published, top-1 agreement,
// weight size and, on a GPU, tok/s before and after. Leaving the page or closing the wizard
// cancels it.
#pragma once

#include <QWizardPage>

#include "gui/hub/wizard/download_wizard.h"

class QLabel;
class QProgressBar;
class QPushButton;
class QRadioButton;

namespace inferdesk::gui {

class QuantReportRunner;

class QuantizePage : public QWizardPage {
  Q_OBJECT

 public:
  QuantizePage(WizardServices& services, WizardState& state);

  QRadioButton* asPublishedButton() const { return as_published_; }
  QRadioButton* fp8Button() const { return fp8_; }
  QPushButton* measureButton() const { return measure_; }
  QPushButton* cancelMeasureButton() const { return cancel_; }
  QProgressBar* measureProgress() const { return progress_; }
  QLabel* reportLabel() const { return report_; }
  QuantReportRunner* runner() const { return runner_; }
  // "cpu" / "cuda" to force the backend of the measurement ("": CUDA where usable, else CPU).
  void setMeasureBackend(const QString& name) { backend_ = name; }
  void setMeasureTokens(int max_tokens) { max_tokens_ = max_tokens; }

  void initializePage() override;
  void cleanupPage() override;
  bool validatePage() override;

 public slots:
  void measure();
  void cancelMeasure();

 private:
  void updateMeasureControls();

  WizardServices& services_;
  WizardState& state_;
  QRadioButton* as_published_ = nullptr;
  QRadioButton* fp8_ = nullptr;
  QLabel* note_ = nullptr;
  QPushButton* measure_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* report_ = nullptr;
  QuantReportRunner* runner_ = nullptr;
  QString backend_;
  int max_tokens_ = 256;
};

}  // namespace inferdesk::gui
