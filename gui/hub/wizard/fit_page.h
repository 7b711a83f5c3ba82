// The wizard's fit check: a table of the repository's variants (rows) and context lengths
// (columns), each cell "fits on your GPU", "fits in RAM only" or "does not fit" from fit_check.h,
// the numbers in its tooltip; above it, this machine's GPU (or why there is none) and free RAM. The
// selected row is the variant the next step downloads; rows the wizard cannot download (AWQ, other
// weight folders) are shown with their reason but cannot be picked.
#pragma once

#include <QWizardPage>

#include "gui/hub/fit_check.h"
#include "gui/hub/wizard/download_wizard.h"

class QLabel;
class QTableWidget;

namespace inferdesk::gui {

class FitPage : public QWizardPage {
  Q_OBJECT

 public:
  FitPage(WizardServices& services, WizardState& state);

  QTableWidget* table() const { return table_; }
  QLabel* machineLabel() const { return machine_; }
  const std::vector<FitRow>& rows() const { return rows_; }
  // Selects the row of variant `index` (into the overview's variants); false when it cannot be picked.
  bool selectVariant(int index);

  void initializePage() override;
  bool isComplete() const override;
  bool validatePage() override;

 protected:
  void changeEvent(QEvent* event) override;  // verdict colours follow the palette

 private:
  void fill();
  int selectedVariant() const;

  WizardServices& services_;
  WizardState& state_;
  QLabel* machine_ = nullptr;
  QTableWidget* table_ = nullptr;
  QLabel* note_ = nullptr;
  MachineMemory memory_;
  std::vector<FitRow> rows_;
};

}  // namespace inferdesk::gui
