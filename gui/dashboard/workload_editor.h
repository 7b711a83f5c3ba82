// WorkloadEditor: the dashboard's workload form — preset, dataset (random with range ratio,
// ShareGPT file, shared prefix, multi-turn) and its lengths, tokenizer folder, API, load (rate,
// burstiness, concurrency cap), sweep, warm-up, seed and goodput SLOs — showing only the fields
// the chosen dataset and sweep use. spec() / setSpec() convert to and from WorkloadSpec.
#pragma once

#include <QWidget>

#include "gui/dashboard/workload.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLineEdit;
class QSpinBox;

namespace inferdesk::gui {

class WorkloadEditor : public QWidget {
  Q_OBJECT

 public:
  explicit WorkloadEditor(QWidget* parent = nullptr);

  WorkloadSpec spec() const;
  void setSpec(const WorkloadSpec& w);
  void applyPreset(int index);  // keeps the seed, tokenizer and id range the user set
  // The tokenizer used when the field is left empty (the embedded engine's model folder).
  void setDefaultTokenizer(const QString& dir);
  QString label() const;

 private:
  QWidget* buildDatasetBox();
  QWidget* buildLoadBox();
  void updateVisibility();

  QComboBox *preset_ = nullptr, *dataset_ = nullptr, *api_ = nullptr, *sweep_ = nullptr;
  QSpinBox *input_ = nullptr, *output_ = nullptr, *requests_ = nullptr, *seed_ = nullptr, *vocab_ = nullptr;
  QSpinBox *prefixes_ = nullptr, *prefix_len_ = nullptr, *turns_ = nullptr, *cap_ = nullptr, *warmup_ = nullptr;
  QSpinBox* guidellm_points_ = nullptr;
  QDoubleSpinBox *range_ = nullptr, *rate_ = nullptr, *burst_ = nullptr;
  QLineEdit *sharegpt_ = nullptr, *tokenizer_ = nullptr, *sweep_values_ = nullptr, *goodput_ = nullptr, *label_ = nullptr;
  QCheckBox* ignore_eos_ = nullptr;
  QFormLayout *data_form_ = nullptr, *load_form_ = nullptr;
  QString default_tokenizer_;
};

}  // namespace inferdesk::gui
