#include "gui/chat/sampling_panel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>
#include <exception>
#include <limits>
#include <optional>

#include "core/store/store.h"
#include "gui/chat/sampling_json.h"

namespace inferdesk::gui {

namespace {

QDoubleSpinBox* double_box(double lo, double hi, double step, int decimals, QWidget* parent) {
  auto* b = new QDoubleSpinBox(parent);
  b->setRange(lo, hi);
  b->setSingleStep(step);
  b->setDecimals(decimals);
  return b;
}

// The presets every store offers (kept in the code, so they cannot be lost).
std::vector<std::pair<QString, SamplingParams>> builtin_presets() {
  SamplingParams balanced = defaultChatSampling();
  SamplingParams precise = balanced;
  precise.temperature = 0.2f;
  precise.top_p = 0.9f;
  precise.top_k = 20;
  precise.min_p = 0.1f;
  SamplingParams creative = balanced;
  creative.temperature = 1.0f;
  creative.top_p = 0.98f;
  creative.top_k = 0;
  creative.min_p = 0.02f;
  SamplingParams greedy = balanced;
  greedy.temperature = 0.0f;
  greedy.top_p = 1.0f;
  greedy.top_k = 0;
  greedy.min_p = 0.0f;
  return {{"Balanced", balanced}, {"Precise", precise}, {"Creative", creative}, {"Greedy", greedy}};
}

// JSON of the fields the panel shows (for finding the preset the values match).
QString visible_json(SamplingParams p) {
  const SamplingParams d;
  p.presence_penalty = d.presence_penalty;
  p.frequency_penalty = d.frequency_penalty;
  p.ignore_eos = d.ignore_eos;
  return samplingToJson(p);
}

}  // namespace

SamplingPanel::SamplingPanel(store::Settings& settings, QWidget* parent)
    : QWidget(parent), settings_(settings), base_(defaultChatSampling()) {
  buildUi();
  setParams(base_);
  reloadPresets();
}

void SamplingPanel::buildUi() {
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  auto* preset_row = new QHBoxLayout();
  presets_ = new QComboBox(this);
  presets_->setToolTip("Named sampling presets (saved for every chat)");
  presets_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  presets_->setMinimumContentsLength(8);
  save_ = new QPushButton("Save as\u2026", this);
  save_->setToolTip("Save these values as a named preset");
  delete_ = new QPushButton("Delete", this);
  delete_->setToolTip("Delete the selected preset (asks first; built-in presets cannot be deleted)");
  // The buttons under the list: a narrow side column stays readable.
  outer->addWidget(presets_);
  preset_row->addWidget(save_, 1);
  preset_row->addWidget(delete_, 1);
  outer->addLayout(preset_row);

  auto* form = new QFormLayout();
  form->setRowWrapPolicy(QFormLayout::WrapLongRows);  // a narrow column: labels above their fields
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  temperature_ = double_box(0.0, 5.0, 0.05, 2, this);
  temperature_->setToolTip("0 picks the most likely token every time (greedy)");
  top_p_ = double_box(0.01, 1.0, 0.01, 2, this);
  top_k_ = new QSpinBox(this);
  top_k_->setRange(0, 100000);
  top_k_->setSpecialValueText("off");
  min_p_ = double_box(0.0, 1.0, 0.01, 2, this);
  repetition_ = double_box(0.05, 5.0, 0.05, 2, this);
  repetition_->setToolTip("1 is off; above 1 discourages repeating tokens");
  max_tokens_ = new QSpinBox(this);
  max_tokens_->setRange(1, 1000000);
  max_tokens_->setToolTip("The longest reply, in tokens; this much of the context is kept free for it");
  seed_ = new QSpinBox(this);
  seed_->setRange(-1, std::numeric_limits<int>::max());
  seed_->setSpecialValueText("random");
  seed_->setToolTip("The same seed and settings give the same reply");
  form->addRow("Temperature", temperature_);
  form->addRow("Top-p", top_p_);
  form->addRow("Top-k", top_k_);
  form->addRow("Min-p", min_p_);
  form->addRow("Repetition penalty", repetition_);
  form->addRow("Max tokens", max_tokens_);
  form->addRow("Seed", seed_);
  outer->addLayout(form);

  auto on_change = [this] {
    if (updating_) return;
    reloadPresets();  // the combo shows the preset these values match, if any
    emit changed();
  };
  for (QDoubleSpinBox* b : {temperature_, top_p_, min_p_, repetition_})
    connect(b, &QDoubleSpinBox::valueChanged, this, on_change);
  for (QSpinBox* b : {top_k_, max_tokens_, seed_}) connect(b, &QSpinBox::valueChanged, this, on_change);
  connect(presets_, &QComboBox::activated, this, [this](int index) {
    if (index > 0) applyPreset(presets_->itemText(index));
  });
  connect(save_, &QPushButton::clicked, this, &SamplingPanel::saveWithDialog);
  connect(delete_, &QPushButton::clicked, this, &SamplingPanel::deleteSelectedWithConfirmation);
}

SamplingParams SamplingPanel::params() const {
  SamplingParams p = base_;
  p.temperature = static_cast<float>(temperature_->value());
  p.top_p = static_cast<float>(top_p_->value());
  p.top_k = top_k_->value();
  p.min_p = static_cast<float>(min_p_->value());
  p.repetition_penalty = static_cast<float>(repetition_->value());
  p.max_tokens = max_tokens_->value();
  if (seed_->value() >= 0)
    p.seed = static_cast<uint64_t>(seed_->value());
  else
    p.seed.reset();
  return p;
}

void SamplingPanel::setParams(const SamplingParams& params) {
  updating_ = true;
  base_ = params;
  temperature_->setValue(params.temperature);
  top_p_->setValue(params.top_p);
  top_k_->setValue(params.top_k < 0 ? 0 : params.top_k);
  min_p_->setValue(params.min_p);
  repetition_->setValue(params.repetition_penalty);
  max_tokens_->setValue(params.max_tokens);
  const bool seed_fits = params.seed && *params.seed <= static_cast<uint64_t>(std::numeric_limits<int>::max());
  seed_->setValue(seed_fits ? static_cast<int>(*params.seed) : -1);
  updating_ = false;
  reloadPresets();
}

bool SamplingPanel::isBuiltinPreset(const QString& name) {
  for (const auto& [builtin, p] : builtin_presets())
    if (builtin.compare(name.simplified(), Qt::CaseInsensitive) == 0) return true;
  return false;
}

void SamplingPanel::reloadPresets() {
  std::vector<store::SamplingPreset> stored;
  try {
    stored = settings_.list_presets();
  } catch (const std::exception& e) {
    emit errorOccurred(QString("could not read the sampling presets: %1").arg(e.what()));
  }
  // Built-ins first; stored presets of a built-in's name (written by earlier versions) are the
  // built-in itself.
  std::vector<std::pair<QString, SamplingParams>> all = builtin_presets();
  const size_t builtins = all.size();
  for (const auto& p : stored)
    if (!isBuiltinPreset(QString::fromStdString(p.name)))
      all.emplace_back(QString::fromStdString(p.name), samplingFromJson(QString::fromStdString(p.json)));
  const QString current = visible_json(params());
  presets_->blockSignals(true);
  presets_->clear();
  presets_->addItem("Custom");
  int match = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    presets_->addItem(all[i].first);
    presets_->setItemData(presets_->count() - 1, i < builtins ? "built-in preset" : "your preset", Qt::ToolTipRole);
    // Compared through a parse, so key order or number spelling in the stored text do not matter.
    if (match == 0 && visible_json(all[i].second) == current) match = presets_->count() - 1;
  }
  presets_->setCurrentIndex(match);
  presets_->blockSignals(false);
  const bool builtin = match > 0 && isBuiltinPreset(presets_->itemText(match));
  delete_->setEnabled(match > 0 && !builtin);
  delete_->setToolTip(builtin ? "Built-in presets cannot be deleted" : "Delete the selected preset (asks first)");
}

QStringList SamplingPanel::presetNames() const {
  QStringList names;
  for (int i = 1; i < presets_->count(); ++i) names << presets_->itemText(i);
  return names;
}

bool SamplingPanel::applyPreset(const QString& name) {
  std::optional<store::SamplingPreset> preset;
  for (const auto& [builtin, p] : builtin_presets())
    if (builtin == name) preset = store::SamplingPreset{builtin.toStdString(), samplingToJson(p).toStdString(), 0};
  try {
    if (!preset) preset = settings_.get_preset(name.toStdString());
  } catch (const std::exception& e) {
    emit errorOccurred(QString("could not read the preset: %1").arg(e.what()));
    return false;
  }
  if (!preset) return false;
  QStringList problems;
  SamplingParams p = samplingFromJson(QString::fromStdString(preset->json), &problems);
  if (!problems.isEmpty()) emit errorOccurred("preset " + name + ": " + problems.join("; "));
  // Fields the panel does not show stay the chat's own.
  p.ignore_eos = base_.ignore_eos;
  p.presence_penalty = base_.presence_penalty;
  p.frequency_penalty = base_.frequency_penalty;
  setParams(p);
  emit changed();
  return true;
}

bool SamplingPanel::savePreset(const QString& name) {
  const QString n = name.simplified();
  if (n.isEmpty() || n == "Custom") return false;
  if (isBuiltinPreset(n)) {
    emit errorOccurred(QString("\u201c%1\u201d is a built-in preset: save yours under another name").arg(n));
    return false;
  }
  try {
    settings_.save_preset(n.toStdString(), visible_json(params()).toStdString());
  } catch (const std::exception& e) {
    emit errorOccurred(QString("could not save the preset: %1").arg(e.what()));
    return false;
  }
  reloadPresets();
  return true;
}

bool SamplingPanel::deletePreset(const QString& name) {
  if (isBuiltinPreset(name)) {
    emit errorOccurred(QString("\u201c%1\u201d is a built-in preset and cannot be deleted").arg(name));
    return false;
  }
  try {
    settings_.delete_preset(name.toStdString());
  } catch (const std::exception& e) {
    emit errorOccurred(QString("could not delete the preset: %1").arg(e.what()));
    return false;
  }
  reloadPresets();
  return true;
}

void SamplingPanel::saveWithDialog() {
  auto* dialog = new QInputDialog(this);
  dialog->setObjectName("presetNameDialog");
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->setWindowTitle("Save sampling preset");
  dialog->setLabelText("Name of the new preset (built-in names are taken):");
  const bool builtin = presets_->currentIndex() > 0 && isBuiltinPreset(presets_->currentText());
  dialog->setTextValue(presets_->currentIndex() > 0 && !builtin ? presets_->currentText() : QString());
  // Wide enough for its title: a narrow dialog cuts the title off in most window managers.
  dialog->setMinimumWidth(std::max(380, dialog->fontMetrics().horizontalAdvance(dialog->windowTitle()) + 160));
  dialog->setWindowModality(Qt::WindowModal);
  connect(dialog, &QInputDialog::textValueSelected, this, [this](const QString& name) { savePreset(name); });
  dialog->open();
}

void SamplingPanel::deleteSelectedWithConfirmation() {
  if (presets_->currentIndex() <= 0) return;
  const QString name = presets_->currentText();
  if (isBuiltinPreset(name)) {
    emit errorOccurred(QString("\u201c%1\u201d is a built-in preset and cannot be deleted").arg(name));
    return;
  }
  auto* box = new QMessageBox(QMessageBox::Question, "Delete preset",
                              QString("Delete the preset \u201c%1\u201d? Chats keep their settings.").arg(name),
                              QMessageBox::Yes | QMessageBox::Cancel, this);
  box->setObjectName("deletePresetConfirmation");
  box->setDefaultButton(QMessageBox::Cancel);
  box->setWindowModality(Qt::WindowModal);
  box->setAttribute(Qt::WA_DeleteOnClose);
  connect(box, &QMessageBox::finished, this, [this, name](int result) {
    if (result == QMessageBox::Yes) deletePreset(name);
  });
  box->open();
}

}  // namespace inferdesk::gui
