// TokenDialog: enter (or remove) the Hugging Face token the app sends. It says where the token will
// be kept (the desktop's secret service, or the 0600 file and why) and, when opened from a gated
// model's error, where access is requested. The token is stored through TokenVault only.
#pragma once

#include <QDialog>

class QLabel;
class QLineEdit;
class QPushButton;

namespace inferdesk::gui {

class TokenVault;

class TokenDialog : public QDialog {
  Q_OBJECT

 public:
  // `context_html`: why the token is asked for (a gated model's message with its link), or "".
  TokenDialog(TokenVault& vault, const QString& endpoint, const QString& context_html, QWidget* parent = nullptr);
  // Opens one (window-modal, deleted when closed) and returns it.
  static TokenDialog* openFor(TokenVault& vault, const QString& endpoint, const QString& context_html, QWidget* parent);

  QLineEdit* tokenEdit() const { return edit_; }
  QPushButton* saveButton() const { return save_; }
  QPushButton* removeButton() const { return remove_; }
  QLabel* errorLabel() const { return error_; }

 private:
  void updateWhere();

  TokenVault& vault_;
  QLabel* where_ = nullptr;
  QLineEdit* edit_ = nullptr;
  QPushButton* save_ = nullptr;
  QPushButton* remove_ = nullptr;
  QLabel* error_ = nullptr;
  bool saving_ = false;
};

}  // namespace inferdesk::gui
