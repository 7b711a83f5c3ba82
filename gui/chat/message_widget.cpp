#include "gui/chat/message_widget.h"

#include <QApplication>
#include <QClipboard>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include "gui/app/theme.h"
#include "gui/chat/markdown_view.h"

namespace inferdesk::gui {

namespace {

constexpr int kCopiedMs = 1500;

QColor mix(const QColor& a, const QColor& b, double t) {
  return QColor::fromRgbF(static_cast<float>(a.redF() * (1 - t) + b.redF() * t),
                          static_cast<float>(a.greenF() * (1 - t) + b.greenF() * t),
                          static_cast<float>(a.blueF() * (1 - t) + b.blueF() * t));
}

// Compact flat buttons without a style sheet (one would freeze this widget's palette).
QToolButton* flat_button(const QString& text, const QString& tip, QWidget* parent) {
  auto* b = new QToolButton(parent);
  b->setText(text);
  b->setAutoRaise(true);
  b->setToolButtonStyle(Qt::ToolButtonTextOnly);
  b->setToolTip(tip);
  b->setCursor(Qt::PointingHandCursor);
  return b;
}

}  // namespace

MessageWidget::MessageWidget(QWidget* parent) : QFrame(parent) { buildUi(); }

void MessageWidget::buildUi() {
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(12, 8, 12, 8);
  outer->setSpacing(4);

  auto* header = new QHBoxLayout();
  header->setSpacing(4);
  author_ = new QLabel(this);
  QFont bold = author_->font();
  bold.setBold(true);
  author_->setFont(bold);
  header->addWidget(author_);
  header->addStretch(1);
  prev_ = new QToolButton(this);
  prev_->setText(QString(QChar(0x2039)));
  prev_->setToolTip("Previous version");
  prev_->setAutoRaise(true);
  sibling_label_ = new QLabel(this);
  next_ = new QToolButton(this);
  next_->setText(QString(QChar(0x203a)));
  next_->setToolTip("Next version");
  next_->setAutoRaise(true);
  header->addWidget(prev_);
  header->addWidget(sibling_label_);
  header->addWidget(next_);
  edit_ = flat_button("Edit", "Edit this message (starts a new branch)", this);
  regenerate_ = flat_button("Regenerate", "Write another reply (kept as a new version)", this);
  copy_ = flat_button("Copy", "Copy the message's text", this);
  header->addWidget(edit_);
  header->addWidget(regenerate_);
  header->addWidget(copy_);
  outer->addLayout(header);

  body_ = new MarkdownBody(this);
  outer->addWidget(body_);

  edit_box_ = new QWidget(this);
  auto* edit_layout = new QVBoxLayout(edit_box_);
  edit_layout->setContentsMargins(0, 0, 0, 0);
  editor_ = new QPlainTextEdit(edit_box_);
  editor_->setMinimumHeight(70);
  editor_->setMaximumHeight(200);
  edit_layout->addWidget(editor_);
  auto* edit_buttons = new QHBoxLayout();
  edit_buttons->addStretch(1);
  edit_cancel_ = new QPushButton("Cancel", edit_box_);
  edit_send_ = new QPushButton("Save && send", edit_box_);
  edit_send_->setDefault(true);
  edit_buttons->addWidget(edit_cancel_);
  edit_buttons->addWidget(edit_send_);
  edit_layout->addLayout(edit_buttons);
  edit_box_->hide();
  outer->addWidget(edit_box_);

  context_note_ = new DimLabel("Left out of the last prompt: the conversation no longer fits the model's context.",
                               this);
  context_note_->setWordWrap(true);
  context_note_->hide();
  outer->addWidget(context_note_);

  stats_ = new DimLabel(QString(), this);
  stats_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  stats_->setWordWrap(true);  // a long error message wraps instead of widening the page
  outer->addWidget(stats_);

  connect(copy_, &QToolButton::clicked, this, [this] {
    QApplication::clipboard()->setText(content_);
    showCopied();
    emit copied(id_);
  });
  connect(edit_, &QToolButton::clicked, this, &MessageWidget::startEditing);
  connect(edit_cancel_, &QPushButton::clicked, this, &MessageWidget::cancelEditing);
  connect(edit_send_, &QPushButton::clicked, this, [this] {
    const QString text = editor_->toPlainText();
    if (text.trimmed().isEmpty()) return;
    cancelEditing();
    emit editSubmitted(id_, text);
  });
  connect(regenerate_, &QToolButton::clicked, this, [this] { emit regenerateRequested(id_); });
  connect(prev_, &QToolButton::clicked, this, [this] { emit siblingRequested(id_, -1); });
  connect(next_, &QToolButton::clicked, this, [this] { emit siblingRequested(id_, +1); });
}

void MessageWidget::setRow(const ConversationModel::Row& row, const QString& statsText, bool inContext, bool busy) {
  const store::Message& m = row.message;
  const QString role = store::to_string(m.role);
  if (role != role_) {
    role_ = role;
    applyRoleStyle();
    author_->setText(role == "user" ? "You" : role == "assistant" ? "Assistant" : "System");
  }
  id_ = m.id;
  content_ = QString::fromStdString(m.content);
  status_ = store::to_string(m.status);
  sibling_index_ = row.sibling_index;
  sibling_count_ = static_cast<int>(row.siblings.size());
  busy_ = busy;

  if (status_ == "streaming" && content_.isEmpty())
    body_->setMarkdownText("*\u2026*");
  else if (role_ == "user")  // typed text: Shift+Enter line breaks are meant
    body_->setMarkdownText(preserveLineBreaks(content_));
  else
    body_->setMarkdownText(content_, /*coalesce=*/status_ == "streaming");
  const QString position = QString("%1/%2").arg(sibling_index_ + 1).arg(sibling_count_);
  if (sibling_label_->text() != position) sibling_label_->setText(position);

  QString stats;
  if (role_ == "assistant") {
    if (status_ == "streaming")
      stats = "writing\u2026";
    else if (!statsText.isEmpty())
      stats = statsText;
    else if (status_ != "complete")  // a reply without stats says only how it ended
      stats = status_;
    if (status_ == "stopped" && !stats.contains("cancelled") && !stats.contains("stopped")) stats += " \u00b7 stopped";
    if (status_ == "error" && !stats.contains("error")) stats += stats.isEmpty() ? "error" : " \u00b7 error";
  }
  if (stats_->text() != stats) stats_->setText(stats);
  stats_->setVisible(!stats.isEmpty());
  context_note_->setVisible(!inContext);
  if (inContext != in_context_) {  // palette changes repaint the whole body: only when needed
    in_context_ = inContext;
    if (inContext) {
      body_->setPalette(QPalette());  // inherit again, so theme changes reach it
    } else {
      QPalette body_pal = body_->palette();
      body_pal.setColor(QPalette::Text, palette().color(QPalette::PlaceholderText));
      body_->setPalette(body_pal);
    }
  }
  updateButtons();
}

void MessageWidget::applyRoleStyle() {
  setObjectName(role_ == "user" ? "userMessage" : "assistantMessage");
  // Painted in paintEvent from the current palette: a style sheet would freeze the palette of
  // this frame and its children, and a theme switch would no longer reach them.
  update();
}

QColor MessageWidget::backgroundColor() const {
  const QPalette pal = parentWidget() ? parentWidget()->palette() : palette();
  const QColor base = pal.color(QPalette::Base);
  return role_ == "user" ? mix(base, pal.color(QPalette::Highlight), 0.12) : base;
}

void MessageWidget::paintEvent(QPaintEvent* event) {
  const QPalette pal = parentWidget() ? parentWidget()->palette() : palette();
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  p.setPen(QPen(mix(pal.color(QPalette::Base), pal.color(QPalette::Text), 0.18), 1));
  p.setBrush(backgroundColor());
  p.drawRoundedRect(QRectF(rect()).adjusted(0.5, 0.5, -0.5, -0.5), 8, 8);
  QFrame::paintEvent(event);
}

void MessageWidget::changeEvent(QEvent* event) {
  QFrame::changeEvent(event);
  if (event->type() == QEvent::PaletteChange && !in_context_) {
    // The greyed body keeps an explicit colour: take it from the new palette.
    QPalette body_pal = body_->palette();
    body_pal.setColor(QPalette::Text, palette().color(QPalette::PlaceholderText));
    body_->setPalette(body_pal);
  }
}

void MessageWidget::showCopied() {
  copy_->setText("Copied \u2713");
  copy_->setToolTip("The message's text is on the clipboard");
  QTimer::singleShot(kCopiedMs, this, [this] {
    copy_->setText("Copy");
    copy_->setToolTip("Copy the message's text");
  });
}

void MessageWidget::setBusy(bool busy) {
  busy_ = busy;
  updateButtons();
}

void MessageWidget::updateButtons() {
  const bool streaming = status_ == "streaming";
  const bool has_siblings = sibling_count_ > 1;
  prev_->setVisible(has_siblings);
  next_->setVisible(has_siblings);
  sibling_label_->setVisible(has_siblings);
  prev_->setEnabled(!busy_ && sibling_index_ > 0);
  next_->setEnabled(!busy_ && sibling_index_ + 1 < sibling_count_);
  edit_->setVisible(role_ == "user" && !editing_);
  edit_->setEnabled(!busy_);
  regenerate_->setVisible(role_ == "assistant");
  regenerate_->setEnabled(!busy_ && !streaming);
  copy_->setEnabled(!content_.isEmpty());
}

void MessageWidget::startEditing() {
  if (role_ != "user" || busy_) return;
  editing_ = true;
  editor_->setPlainText(content_);
  body_->hide();
  edit_box_->show();
  editor_->setFocus();
  updateButtons();
}

void MessageWidget::cancelEditing() {
  editing_ = false;
  edit_box_->hide();
  body_->show();
  updateButtons();
}

}  // namespace inferdesk::gui
