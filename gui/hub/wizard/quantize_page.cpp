#include "gui/hub/wizard/quantize_page.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QRadioButton>
#include <QVBoxLayout>

#include <cmath>
#include <exception>

#include "gui/hub/load_preference.h"
#include "gui/hub/wizard/quant_report.h"

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

  measure_ = new QPushButton(tr("Measure accuracy"));
  measure_->setObjectName("measureAccuracy");
  measure_->setToolTip(tr("Run the model as published and with FP8 over a shipped text and compare them"));
  cancel_ = new QPushButton(tr("Cancel"));
  cancel_->setObjectName("cancelMeasure");
  progress_ = new QProgressBar();
  progress_->setObjectName("measureProgress");
  progress_->setRange(0, 1000);
  progress_->setTextVisible(false);
  auto* row = new QHBoxLayout();
  row->addWidget(measure_);
  row->addWidget(progress_, 1);
  row->addWidget(cancel_);
  report_ = new QLabel();
  report_->setObjectName("accuracyReport");
  report_->setWordWrap(true);
  report_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  layout->addWidget(as_published_);
  layout->addWidget(fp8_);
  layout->addLayout(row);
  layout->addWidget(report_);
  layout->addWidget(note_);
  layout->addStretch(1);

  runner_ = new QuantReportRunner(this);
  connect(measure_, &QPushButton::clicked, this, &QuantizePage::measure);
  connect(cancel_, &QPushButton::clicked, this, &QuantizePage::cancelMeasure);
  connect(fp8_, &QRadioButton::toggled, this, [this](bool on) {
    if (!on) cancelMeasure();
    updateMeasureControls();
  });
  connect(runner_, &QuantReportRunner::progress, this,
          [this](double f) { progress_->setValue(static_cast<int>(std::lround(f * 1000))); });
  connect(runner_, &QuantReportRunner::finished, this, [this] {
    progress_->setValue(progress_->maximum());
    report_->setText(runner_->reportText());
    updateMeasureControls();
  });
  connect(runner_, &QuantReportRunner::cancelled, this, [this] {
    progress_->setValue(0);
    report_->setText(tr("Measurement cancelled."));
    updateMeasureControls();
  });
  connect(runner_, &QuantReportRunner::failed, this, [this](const QString& message) {
    progress_->setValue(0);
    report_->setText(tr("Could not measure the accuracy: %1").arg(message));
    updateMeasureControls();
  });
  updateMeasureControls();
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
  report_->clear();
  progress_->setValue(0);
  updateMeasureControls();
}

void QuantizePage::cleanupPage() {
  cancelMeasure();
  QWizardPage::cleanupPage();
}

void QuantizePage::updateMeasureControls() {
  const bool offered = !fp8_->isHidden() && fp8_->isChecked() && !state_.model_dir.isEmpty();
  const bool running = runner_->running();
  measure_->setVisible(offered);
  measure_->setEnabled(!running);
  progress_->setVisible(offered && (running || progress_->value() > 0));
  cancel_->setVisible(offered && running);
  report_->setVisible(offered && !report_->text().isEmpty());
}

void QuantizePage::measure() {
  if (runner_->running() || state_.model_dir.isEmpty()) return;
  QuantReportRequest req;
  req.model_dir = state_.model_dir;
  req.quantization = LoadQuantization::Fp8;
  req.backend = backend_;
  req.max_tokens = max_tokens_;
  if (!runner_->start(req)) return;
  progress_->setValue(0);
  report_->setText(tr("Measuring: loading the model as published and with FP8, one after the other…"));
  updateMeasureControls();
}

void QuantizePage::cancelMeasure() {
  if (!runner_->running()) return;
  runner_->cancel();
  report_->setText(tr("Cancelling…"));
  updateMeasureControls();
}

bool QuantizePage::validatePage() {
  cancelMeasure();  // the report only informs the choice
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
