#include "gui/hub/token_dialog.h"

#include <QDialogButtonBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "gui/hub/hub_widgets.h"
#include "gui/hub/token_vault.h"

namespace inferdesk::gui {

TokenDialog::TokenDialog(TokenVault& vault, const QString& endpoint, const QString& context_html, QWidget* parent)
    : QDialog(parent), vault_(vault) {
  setObjectName("tokenDialog");
  setWindowTitle(tr("Hugging Face token"));
  auto* layout = new QVBoxLayout(this);
  if (!context_html.isEmpty()) {
    QLabel* context = make_link_label("tokenContext");
    context->setText(context_html);
    layout->addWidget(context);
  }
  const QString tokens = endpoint.toHtmlEscaped() + "/settings/tokens";
  auto* intro = new QLabel(tr("Gated and private models need a token of an account that has access. Create a "
                              "read token at <a href=\"%1\">%1</a> and paste it here.")
                               .arg(tokens));
  intro->setWordWrap(true);
  intro->setOpenExternalLinks(true);
  layout->addWidget(intro);
  edit_ = new QLineEdit();
  edit_->setObjectName("tokenEdit");
  edit_->setEchoMode(QLineEdit::Password);  // a secret: never shown, never logged
  edit_->setPlaceholderText(tr("hf_…"));
  layout->addWidget(edit_);
  where_ = new QLabel();
  where_->setWordWrap(true);
  layout->addWidget(where_);
  error_ = new QLabel();
  error_->setObjectName("tokenError");
  error_->setWordWrap(true);
  error_->hide();
  layout->addWidget(error_);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Cancel);
  save_ = buttons->addButton(tr("Save token"), QDialogButtonBox::AcceptRole);
  remove_ = buttons->addButton(tr("Remove stored token"), QDialogButtonBox::DestructiveRole);
  remove_->setEnabled(!vault_.token().isEmpty());
  save_->setEnabled(false);
  layout->addWidget(buttons);
  updateWhere();

  connect(edit_, &QLineEdit::textChanged, this,
          [this](const QString& t) { save_->setEnabled(!t.trimmed().isEmpty()); });
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  connect(save_, &QPushButton::clicked, this, [this] {
    saving_ = true;
    error_->hide();
    vault_.save(edit_->text());
  });
  connect(remove_, &QPushButton::clicked, this, [this] {
    saving_ = true;
    vault_.clear();
  });
  connect(&vault_, &TokenVault::tokenChanged, this, [this] {
    if (saving_) accept();
  });
  connect(&vault_, &TokenVault::failed, this, [this](const QString& m) {
    saving_ = false;
    error_->setText(m);
    error_->show();
    updateWhere();
  });
}

TokenDialog* TokenDialog::openFor(TokenVault& vault, const QString& endpoint, const QString& context_html,
                                  QWidget* parent) {
  auto* dialog = new TokenDialog(vault, endpoint, context_html, parent);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->open();
  return dialog;
}

void TokenDialog::updateWhere() {
  QString text = tr("It is kept in %1, never in InferDesk's database.").arg(vault_.location());
  if (!vault_.secretServiceProblem().isEmpty())
    text += tr(" (The desktop's secret service did not answer: %1.)").arg(vault_.secretServiceProblem());
  where_->setText(text);
}

}  // namespace inferdesk::gui
