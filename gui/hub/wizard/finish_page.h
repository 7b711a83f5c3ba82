// The wizard's last step: the model is in the model list, ready to load (with FP8 on load when
// that was chosen); Finish can switch to the Models page with it selected.
#pragma once

#include <QWizardPage>

#include "gui/hub/wizard/download_wizard.h"

class QCheckBox;
class QLabel;

namespace inferdesk::gui {

class FinishPage : public QWizardPage {
  Q_OBJECT

 public:
  FinishPage(WizardServices& services, WizardState& state);

  QLabel* summaryLabel() const { return summary_; }
  QCheckBox* showModelBox() const { return show_; }
  bool showModelRequested() const;

  void initializePage() override;

 private:
  WizardServices& services_;
  WizardState& state_;
  QLabel* summary_ = nullptr;
  QCheckBox* show_ = nullptr;
};

}  // namespace inferdesk::gui
