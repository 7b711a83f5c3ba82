#include "gui/hub/wizard/finish_page.h"

#include <QCheckBox>
#include <QLabel>
#include <QVBoxLayout>

#include "gui/hub/downloads_panel.h"

namespace inferdesk::gui {

FinishPage::FinishPage(WizardServices& services, WizardState& state) : services_(services), state_(state) {
  setObjectName("finishPage");
  setTitle(tr("Ready"));
  setFinalPage(true);
  auto* layout = new QVBoxLayout(this);
  summary_ = new QLabel();
  summary_->setObjectName("finishSummary");
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(summary_);
  show_ = new QCheckBox(tr("Show it on the Models page"));
  show_->setChecked(true);
  layout->addWidget(show_);
  layout->addStretch(1);
}

void FinishPage::initializePage() {
  const DownloadEntry* e = services_.downloads.manager()->entry(state_.download_id);
  const QString folder = e ? e->snapshot_dir : QString();
  QString text = tr("%1 is in your model list, ready to load.").arg(state_.repo_id);
  if (state_.load_fp8) text += tr(" It will be quantized to FP8 as it loads.");
  text += tr("\n\nFolder (the shared Hugging Face cache, also used by transformers and vLLM):\n%1").arg(folder);
  summary_->setText(text);
  show_->setVisible(static_cast<bool>(services_.show_model));
}

bool FinishPage::showModelRequested() const { return !show_->isHidden() && show_->isChecked(); }

}  // namespace inferdesk::gui
