// The sampling panel: temperature, top-p, top-k, min-p, repetition penalty, max tokens and seed
// for the chat's replies, with named presets. The chat page stores the panel's values per chat;
// the panel itself only edits values and presets. Built-in presets (Balanced, Precise, Creative,
// Greedy) live in the code, are always offered and cannot be deleted or overwritten; the user's
// own presets are kept in the store (store::Settings presets, JSON as in sampling_json.h) and are
// deleted only after a confirmation.
#pragma once

#include <QWidget>

#include "core/sample/sampling_params.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSpinBox;

namespace inferdesk::store {
class Settings;
}

namespace inferdesk::gui {

class SamplingPanel : public QWidget {
  Q_OBJECT

 public:
  explicit SamplingPanel(store::Settings& settings, QWidget* parent = nullptr);

  // The values shown (fields the panel does not show keep what setParams gave them).
  SamplingParams params() const;
  // Shows `params` without emitting changed().
  void setParams(const SamplingParams& params);

  void reloadPresets();
  QStringList presetNames() const;
  // Applies a stored preset (emits changed); false when it does not exist.
  bool applyPreset(const QString& name);
  // Saves the shown values under `name` (replacing a preset of the user's of that name); refused
  // for a built-in name.
  bool savePreset(const QString& name);
  // Deletes one of the user's presets at once (built-ins: refused, errorOccurred says why).
  bool deletePreset(const QString& name);
  static bool isBuiltinPreset(const QString& name);
  // The Delete button: asks first (a window-modal QMessageBox, objectName
  // "deletePresetConfirmation").
  void deleteSelectedWithConfirmation();
  QPushButton* deleteButton() const { return delete_; }
  QPushButton* saveButton() const { return save_; }

  QDoubleSpinBox* temperatureBox() const { return temperature_; }
  QSpinBox* maxTokensBox() const { return max_tokens_; }
  QSpinBox* seedBox() const { return seed_; }
  QComboBox* presetBox() const { return presets_; }

 signals:
  void changed();  // the user changed a value or applied a preset
  void errorOccurred(const QString& message);

 private:
  void buildUi();
  void saveWithDialog();

  store::Settings& settings_;
  SamplingParams base_;  // hidden fields come from here
  bool updating_ = false;
  QComboBox* presets_ = nullptr;
  QPushButton* save_ = nullptr;
  QPushButton* delete_ = nullptr;
  QDoubleSpinBox* temperature_ = nullptr;
  QDoubleSpinBox* top_p_ = nullptr;
  QSpinBox* top_k_ = nullptr;
  QDoubleSpinBox* min_p_ = nullptr;
  QDoubleSpinBox* repetition_ = nullptr;
  QSpinBox* max_tokens_ = nullptr;
  QSpinBox* seed_ = nullptr;
};

}  // namespace inferdesk::gui
