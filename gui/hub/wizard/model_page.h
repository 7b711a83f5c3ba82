// The wizard's model step: what the chosen repository is before anything is downloaded (fetched on
// HubService's pool: model info, files, README, config.json): its README summary, license, gated
// or not, architecture and whether InferDesk runs it, parameters, download size and the variants of
// its weights. A gated repository whose files the token cannot read shows the Hub's message with
// the link and an "Enter token…" button; a saved token fetches it again.
#pragma once

#include <QWizardPage>

#include "gui/hub/hub_service.h"
#include "gui/hub/wizard/download_wizard.h"

class QLabel;
class QPushButton;

namespace inferdesk::gui {

class ModelPage : public QWizardPage {
  Q_OBJECT

 public:
  ModelPage(WizardServices& services, WizardState& state);

  QLabel* factsLabel() const { return facts_; }
  QLabel* summaryLabel() const { return summary_; }
  QLabel* problemLabel() const { return problem_; }
  QPushButton* tokenButton() const { return token_; }
  bool loading() const { return loading_; }

  void initializePage() override;
  bool isComplete() const override;

 private:
  void fetch();
  void show();
  void showFailure(const HubFailure& f);
  void enterToken(const QString& context);

  WizardServices& services_;
  WizardState& state_;
  QLabel* facts_ = nullptr;
  QLabel* summary_ = nullptr;
  QLabel* problem_ = nullptr;
  QPushButton* token_ = nullptr;
  bool loading_ = false;
  int serial_ = 0;
};

}  // namespace inferdesk::gui
