#include "gui/chat/conversation_view.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QEvent>
#include <QLabel>
#include <QScrollBar>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>

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

ConversationView::ConversationView(ConversationModel& model, QWidget* parent) : QScrollArea(parent), model_(model) {
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
  placeholder_->setTextInteractionFlags(Qt::LinksAccessibleByMouse | Qt::LinksAccessibleByKeyboard);
  connect(placeholder_, &QLabel::linkActivated, this, &ConversationView::linkActivated);
  layout_->addWidget(placeholder_);
  layout_->addStretch(1);
  setWidget(content_);
  slices_ = new QTimer(this);
  slices_->setSingleShot(true);
  slices_->setInterval(0);
  connect(slices_, &QTimer::timeout, this, &ConversationView::buildOlderSlice);

  connect(&model_, &QAbstractItemModel::modelReset, this, &ConversationView::rebuild);
  connect(&model_, &QAbstractItemModel::rowsInserted, this,
          [this](const QModelIndex&, int first, int last) { insertRows(first, last); });
  connect(&model_, &QAbstractItemModel::rowsRemoved, this,
          [this](const QModelIndex&, int first, int last) { removeRows(first, last); });
  connect(&model_, &QAbstractItemModel::dataChanged, this,
          [this](const QModelIndex& a, const QModelIndex& b) { updateRows(a.row(), b.row()); });
  // Follow the end while the user has not scrolled away from it; when older messages appear above
  // a reader, move by their height so the text under the reader's eyes stays put.
  connect(verticalScrollBar(), &QScrollBar::valueChanged, this, [this] {
    follow_ = atEnd();
    maybeBuildOlder();
  });
  connect(verticalScrollBar(), &QScrollBar::rangeChanged, this, [this](int, int max) {
    QScrollBar* bar = verticalScrollBar();
    if (follow_) {
      bar->setValue(max);
    } else if (growing_above_) {
      bar->setValue(bar->value() + (max - last_max_));
      follow_ = false;
    }
    last_max_ = max;
    maybeBuildOlder();  // the rows built so far may not reach a screen above the view yet
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

int ConversationView::messageCount() const { return static_cast<int>(widgets_.size()); }

MessageWidget* ConversationView::messageAt(int row) const {
  const int i = row - first_built_;
  return i >= 0 && i < messageCount() ? widgets_[i] : nullptr;
}

MessageWidget* ConversationView::messageById(std::int64_t id) const {
  for (MessageWidget* w : widgets_)
    if (w->messageId() == id) return w;
  return nullptr;
}

QWidget* ConversationView::newChunk(int layoutIndex) {
  auto* chunk = new QWidget(content_);
  auto* v = new QVBoxLayout(chunk);
  v->setContentsMargins(0, 0, 0, 0);
  v->setSpacing(layout_->spacing());
  layout_->insertWidget(layoutIndex, chunk);
  return chunk;
}

void ConversationView::placeWidget(int row) {
  const int i = row - first_built_;
  // After the widget of the row before, in its chunk; the first row goes first in the first chunk.
  QWidget* chunk = nullptr;
  int at = 0;
  if (i > 0) {
    MessageWidget* before = widgets_[i - 1];
    chunk = before->parentWidget();
    at = static_cast<QVBoxLayout*>(chunk->layout())->indexOf(before) + 1;
  } else {
    chunk = layout_->count() > 2 ? layout_->itemAt(1)->widget() : newChunk(1);
  }
  MessageWidget* w = makeWidget(chunk);
  static_cast<QVBoxLayout*>(chunk->layout())->insertWidget(at, w);
  widgets_.insert(i, w);
  updateRow(row);
}

MessageWidget* ConversationView::makeWidget(QWidget* parent) {
  auto* w = new MessageWidget(parent);
  connect(w, &MessageWidget::editSubmitted, this, &ConversationView::editSubmitted);
  connect(w, &MessageWidget::regenerateRequested, this, &ConversationView::regenerateRequested);
  connect(w, &MessageWidget::siblingRequested, this, &ConversationView::siblingRequested);
  return w;
}

void ConversationView::rebuild() {
  slices_->stop();
  growing_above_ = false;
  widgets_.clear();
  while (layout_->count() > 2) discard(layout_->takeAt(1));  // the chunks, with their messages
  const int rows = model_.rowCount();
  first_built_ = std::max(0, rows - kInitialRows);
  newChunk(1);
  for (int row = first_built_; row < rows; ++row) placeWidget(row);
  updatePlaceholder();
  follow_ = true;
  QTimer::singleShot(0, this, [this] {
    if (follow_) scrollToEnd();
  });
}

void ConversationView::maybeBuildOlder() {
  // Within a screen of the top, more is wanted soon: one slice on the next turn of the loop.
  if (first_built_ > 0 && !slices_->isActive() && verticalScrollBar()->value() <= viewport()->height())
    slices_->start();
}

void ConversationView::buildOlderSlice() {
  QElapsedTimer budget;
  budget.start();
  growing_above_ = true;
  QWidget* chunk = newChunk(1);  // above everything built
  auto* v = static_cast<QVBoxLayout*>(chunk->layout());
  for (int n = 0; first_built_ > 0 && n < kSliceRows && (n == 0 || budget.elapsed() < kSliceMs); ++n) {
    --first_built_;
    MessageWidget* w = makeWidget(chunk);
    v->insertWidget(0, w);
    widgets_.prepend(w);
    updateRow(first_built_);
  }
  // The slice's layout arrives within a few turns of the event loop; rangeChanged moves the view
  // by its height meanwhile and asks for the next slice if the top is still near.
  const int generation = ++growth_generation_;
  QTimer::singleShot(100, this, [this, generation] {
    if (generation == growth_generation_) growing_above_ = false;
  });
}

void ConversationView::buildAll() {
  while (first_built_ > 0) {
    buildOlderSlice();
    QCoreApplication::processEvents();
  }
}

void ConversationView::insertRows(int first, int last) {
  if (first < first_built_) {  // a change among rows not built yet: start over
    rebuild();
    return;
  }
  for (int row = first; row <= last; ++row) placeWidget(row);
  updatePlaceholder();
}

void ConversationView::removeRows(int first, int last) {
  if (first < first_built_) {
    rebuild();
    return;
  }
  for (int row = last; row >= first; --row) {
    MessageWidget* w = widgets_.takeAt(row - first_built_);
    QLayout* chunk = w->parentWidget()->layout();
    discard(chunk->takeAt(chunk->indexOf(w)));
  }
  updatePlaceholder();
}

void ConversationView::updateRows(int first, int last) {
  for (int row = std::max(first, first_built_); row <= last; ++row) updateRow(row);
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
  for (MessageWidget* w : widgets_) w->setBusy(busy);
}

void ConversationView::setPlaceholder(const QString& text) {
  placeholder_->setText(text);
  updatePlaceholder();
}

QString ConversationView::placeholderText() const { return placeholder_->text(); }

void ConversationView::changeEvent(QEvent* event) {
  QScrollArea::changeEvent(event);
  if (event->type() != QEvent::PaletteChange || !placeholder_) return;
  const QString text = placeholder_->text();  // rich text keeps the link colour it was laid out with
  placeholder_->clear();
  placeholder_->setText(text);
}

bool ConversationView::placeholderVisible() const { return !placeholder_->isHidden(); }

void ConversationView::updatePlaceholder() {
  placeholder_->setVisible(model_.rowCount() == 0 && !placeholder_->text().isEmpty());
}

}  // namespace inferdesk::gui
