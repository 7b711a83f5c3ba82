// The Models page: the registered model folders (table), the selected one's facts, a memory
// estimate for the chosen backend and context, and load / unload / cancel with a progress bar.
// All logic lives in ModelManager; this is its view. A context longer than the model's is shown
// as such (Load waits for a valid one) instead of being cut silently; unloading while a reply is
// being written asks first.
#pragma once

#include <QWidget>

#include <functional>

#include "gui/app/app_context.h"
#include "gui/models/model_manager.h"

class QCheckBox;
class QComboBox;
class QGroupBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableView;

namespace inferdesk::gui {

class ModelsPage : public QWidget {
  Q_OBJECT

 public:
  ModelsPage(AppContext& ctx, QWidget* parent = nullptr);

  ModelManager* manager() { return &manager_; }
  QTableView* tableView() const { return table_; }
  QComboBox* backendBox() const { return backend_; }
  QSpinBox* contextBox() const { return context_; }
  // The weights' quantize-on-load choice (data: "none", "fp8", "int8", "int4") and the KV cache's
  // ("auto", "fp8", "int8").
  QComboBox* quantizeChoice() const { return quantize_; }
  QComboBox* kvCacheChoice() const { return kv_dtype_; }
  // Selects `q` in the weights choice where the selected model allows it (the download wizard's
  // recorded preference); false when it does not.
  bool preferQuantization(LoadQuantization q);
  QComboBox* kvDtypeBox() const { return kv_dtype_; }
  QLabel* estimateLabel() const { return estimate_; }
  QLabel* statusLabel() const { return status_; }
  QPushButton* loadButton() const { return load_; }
  QPushButton* unloadButton() const { return unload_; }

  // Selects the row of this registry id (and shows its details); false when absent.
  bool selectModel(qint64 id);
  qint64 selectedId() const;

 public slots:
  void addFolderWithDialog();
  // The load form's FP8 choices.
  LoadPrecision chosenPrecision() const;
  void loadSelected();
  // Unloads; while requests run, after a window-modal confirmation (objectName
  // "unloadConfirmation"). Loading another model while requests run asks the same way.
  void unloadWithConfirmation();

 protected:
  void changeEvent(QEvent* event) override;  // status colours follow the palette

 private:
  // The Load group: backend, context, FP8 choices, the estimate, the buttons and the progress bar.
  QGroupBox* buildLoadBox();
  void buildUi();
  void showDetails();
  void updateEstimate();
  void updateButtons();
  void onLoadProgress(qint64 done, qint64 total);
  // Runs `proceed` at once when no reply is being written; otherwise after a window-modal
  // confirmation whose accepting button says `action`.
  void confirmStoppingReplies(const QString& action, std::function<void()> proceed);

  AppContext& ctx_;
  ModelManager manager_;
  QTableView* table_ = nullptr;
  QLabel* details_ = nullptr;
  QComboBox* backend_ = nullptr;
  QLabel* cuda_note_ = nullptr;
  QSpinBox* context_ = nullptr;
  QString quantizeHelp() const;
  QComboBox* quantize_ = nullptr;
  QComboBox* kv_dtype_ = nullptr;
  QLabel* estimate_ = nullptr;
  QPushButton* add_ = nullptr;
  QPushButton* remove_ = nullptr;
  QPushButton* load_ = nullptr;
  QPushButton* unload_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* status_ = nullptr;
  bool loading_ = false;
  bool loaded_ = false;
  qint64 model_max_context_ = 0;  // of the selected model (0: unknown)
};

}  // namespace inferdesk::gui
