// The wizard's first step: search the Hub for text-generation models (HubClient::search on
// HubService's pool, so typing never waits for the network). Results show downloads, likes, whether
// the model is gated and whether InferDesk runs its architecture (core/model's registry).
#pragma once

#include <QWizardPage>

#include "core/hub/hub_types.h"
#include "gui/hub/wizard/download_wizard.h"

class QLabel;
class QLineEdit;
class QPushButton;
class QTimer;
class QTreeWidget;

namespace inferdesk::gui {

class SearchPage : public QWizardPage {
  Q_OBJECT

 public:
  enum Column { Model, Downloads, Likes, Gated, Architecture };

  SearchPage(WizardServices& services, WizardState& state);

  QLineEdit* queryEdit() const { return query_; }
  QTreeWidget* results() const { return results_; }
  QLabel* statusLabel() const { return status_; }

  bool isComplete() const override;
  bool validatePage() override;

 public slots:
  void search();

 private:
  void showResults(const std::vector<hub::ModelSummary>& found);

  WizardServices& services_;
  WizardState& state_;
  QLineEdit* query_ = nullptr;
  QPushButton* button_ = nullptr;
  QTreeWidget* results_ = nullptr;
  QLabel* status_ = nullptr;
  QTimer* debounce_ = nullptr;
  int serial_ = 0;  // only the latest search's results are shown
};

// "qwen2 (supported)" / "gpt2 (not supported)" / "unknown".
QString architecture_cell(const hub::ModelSummary& m);

}  // namespace inferdesk::gui
