#include "gui/chat/conversation_view.h"

#include <QLabel>
#include <QScrollBar>
#include <QTimer>
#include <QVBoxLayout>

#include "gui/chat/conversation_model.h"
#include "gui/chat/message_widget.h"

namespace inferdesk::gui {

namespace {

// Later, not now: the widget may be the one whose button started this change.
void discard(QLayoutItem* item) {
  if (!item) return;
  if (QWidget* w = item->widget()) {
    w->hide();
    w->deleteLater();
  }
  delete item;
}

}  // namespace

ConversationView::ConversationView(ConversationModel& model, QWidget* parent)
    : QScrollArea(parent), model_(model) {
  setWidgetResizable(true);
  setFrameShape(QFrame::NoFrame);
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  content_ = new QWidget(this);
  content_->setObjectName("conversationContent");
  layout_ = new QVBoxLayout(content_);
  layout_->setContentsMargins(16, 12, 16, 12);
  layout_->setSpacing(10);
  placeholder_ = new QLabel(content_);
  placeholder_->setAlignment(Qt::AlignCenter);
  placeholder_->setWordWrap(true);
  placeholder_->setTextFormat(Qt::RichText);
  layout_->addWidget(placeholder_);
  layout_->addStretch(1);
  setWidget(content_);

  connect(&model_, &QAbstractItemModel::modelReset, this, &ConversationView::rebuild);
  connect(&model_, &QAbstractItemModel::rowsInserted, this,
          [this](const QModelIndex&, int first, int last) { insertRows(first, last); });
  connect(&model_, &QAbstractItemModel::rowsRemoved, this,
          [this](const QModelIndex&, int first, int last) { removeRows(first, last); });
  connect(&model_, &QAbstractItemModel::dataChanged, this,
          [this](const QModelIndex& a, const QModelIndex& b) { updateRows(a.row(), b.row()); });
  // Follow the end while the user has not scrolled away from it.
  connect(verticalScrollBar(), &QScrollBar::valueChanged, this, [this] { follow_ = atEnd(); });
  connect(verticalScrollBar(), &QScrollBar::rangeChanged, this, [this] {
    if (follow_) verticalScrollBar()->setValue(verticalScrollBar()->maximum());
  });
  rebuild();
}

bool ConversationView::atEnd() const {
  const QScrollBar* bar = verticalScrollBar();
  return bar->value() >= bar->maximum() - 8;
}

void ConversationView::scrollToEnd() {
  follow_ = true;
  verticalScrollBar()->setValue(verticalScrollBar()->maximum());
}

int ConversationView::messageCount() const { return layout_->count() - 2; }  // placeholder + stretch

MessageWidget* ConversationView::messageAt(int row) const {
  if (row < 0 || row >= messageCount()) return nullptr;
  return qobject_cast<MessageWidget*>(layout_->itemAt(row + 1)->widget());
}

MessageWidget* ConversationView::messageById(std::int64_t id) const {
  for (int i = 0; i < messageCount(); ++i)
    if (MessageWidget* w = messageAt(i); w && w->messageId() == id) return w;
  return nullptr;
}

void ConversationView::rebuild() {
  while (messageCount() > 0) {
    discard(layout_->takeAt(1));
  }
  if (model_.rowCount() > 0) insertRows(0, model_.rowCount() - 1);
  updatePlaceholder();
  follow_ = true;
  QTimer::singleShot(0, this, [this] { scrollToEnd(); });
}

void ConversationView::insertRows(int first, int last) {
  for (int row = first; row <= last; ++row) {
    auto* w = new MessageWidget(content_);
    connect(w, &MessageWidget::editSubmitted, this, &ConversationView::editSubmitted);
    connect(w, &MessageWidget::regenerateRequested, this, &ConversationView::regenerateRequested);
    connect(w, &MessageWidget::siblingRequested, this, &ConversationView::siblingRequested);
    layout_->insertWidget(row + 1, w);
    updateRow(row);
  }
  updatePlaceholder();
}

void ConversationView::removeRows(int first, int last) {
  for (int row = last; row >= first; --row) {
    discard(layout_->takeAt(row + 1));
  }
  updatePlaceholder();
}

void ConversationView::updateRows(int first, int last) {
  for (int row = first; row <= last; ++row) updateRow(row);
}

void ConversationView::updateRow(int row) {
  MessageWidget* w = messageAt(row);
  const ConversationModel::Row* r = model_.rowAt(row);
  if (!w || !r) return;
  const QModelIndex index = model_.index(row);
  w->setRow(*r, model_.data(index, ConversationModel::StatsTextRole).toString(),
            model_.data(index, ConversationModel::InContextRole).toBool(), busy_);
}

void ConversationView::setBusy(bool busy) {
  busy_ = busy;
  for (int i = 0; i < messageCount(); ++i) messageAt(i)->setBusy(busy);
}

void ConversationView::setPlaceholder(const QString& text) {
  placeholder_->setText(text);
  updatePlaceholder();
}

void ConversationView::updatePlaceholder() {
  placeholder_->setVisible(messageCount() == 0 && !placeholder_->text().isEmpty());
}

}  // namespace inferdesk::gui
