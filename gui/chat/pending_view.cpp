#include "gui/chat/pending_view.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QToolButton>
#include <QVBoxLayout>

#include "gui/app/theme.h"
#include "gui/chat/context_fit.h"

namespace inferdesk::gui {

PendingView::PendingView(QWidget* parent) : QFrame(parent) {
  setObjectName("pendingMessages");
  setFrameShape(QFrame::StyledPanel);
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(8, 4, 8, 4);
  v->setSpacing(2);
  status_ = new DimLabel(QString(), this);
  status_->setWordWrap(true);
  v->addWidget(status_);
  rows_ = new QVBoxLayout();
  rows_->setSpacing(0);
  v->addLayout(rows_);
  hide();
}

QToolButton* PendingView::removeButton(int index) const { return buttons_.value(index); }

void PendingView::setMessages(const QStringList& texts, bool paused) {
  texts_ = texts;
  while (QLayoutItem* item = rows_->takeAt(0)) {
    if (QLayout* l = item->layout()) {
      while (QLayoutItem* inner = l->takeAt(0)) {
        if (QWidget* w = inner->widget()) w->deleteLater();
        delete inner;
      }
    }
    delete item;
  }
  buttons_.clear();
  for (int i = 0; i < texts.size(); ++i) {
    auto* row = new QHBoxLayout();
    auto* text = new QLabel(QString("%1. %2").arg(i + 1).arg(excerpt(texts[i].simplified(), 90)), this);
    text->setToolTip(texts[i]);
    text->setMinimumWidth(40);  // long messages never widen the page
    text->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    auto* remove = new QToolButton(this);
    remove->setText(QString(QChar(0x00d7)));
    remove->setAutoRaise(true);
    remove->setToolTip("Remove this message: it will not be sent");
    connect(remove, &QToolButton::clicked, this, [this, i] { emit removeRequested(i); });
    row->addWidget(text, 1);
    row->addWidget(remove);
    rows_->addLayout(row);
    buttons_ << remove;
  }
  const int n = static_cast<int>(texts.size());
  const QString what = n == 1 ? QString("1 message waits") : QString("%1 messages wait").arg(n);
  status_->setText(paused ? what + ": paused after Stop. Press Send to send them, one by one."
                          : what + ": each is sent on its own, in order, when the reply before it ends.");
  setVisible(n > 0);
}

}  // namespace inferdesk::gui
