// The Settings dialog (Ctrl+,): the appearance (System / Light / Dark, applied at once) and what
// to do with the last used model at start (offer to load it again, load it, or nothing). Each
// choice is saved to the store as soon as it is made.
#pragma once

#include <QDialog>

#include "gui/app/app_context.h"

class QComboBox;

namespace inferdesk::gui {

class SettingsDialog : public QDialog {
  Q_OBJECT

 public:
  SettingsDialog(AppContext& ctx, QWidget* parent = nullptr);

  QComboBox* themeBox() const { return theme_; }
  QComboBox* startupModelBox() const { return startup_; }

 signals:
  void errorOccurred(const QString& message);

 private:
  AppContext& ctx_;
  QComboBox* theme_ = nullptr;
  QComboBox* startup_ = nullptr;
};

}  // namespace inferdesk::gui
