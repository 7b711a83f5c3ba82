#include "gui/app/elided_label.h"

#include <QPainter>
#include <QStyle>
#include <QStyleOption>

#include <algorithm>

namespace inferdesk::gui {

namespace {
constexpr int kMinimumChars = 6;  // "Abc…" stays readable
}

ElidedLabel::ElidedLabel(QWidget* parent) : ElidedLabel(QString(), parent) {}

ElidedLabel::ElidedLabel(const QString& text, QWidget* parent) : QLabel(text, parent) {
  setTextFormat(Qt::PlainText);
  setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Preferred);
  updateToolTip();
}

void ElidedLabel::setFullText(const QString& text) {
  setText(text);
  updateToolTip();
  update();
}

QString ElidedLabel::shownText() const {
  const QRect r = contentsRect();
  return fontMetrics().elidedText(text(), Qt::ElideRight, std::max(0, r.width()));
}

QSize ElidedLabel::minimumSizeHint() const {
  const QFontMetrics fm = fontMetrics();
  const QMargins m = contentsMargins();
  return {std::min(fm.horizontalAdvance(text()), fm.averageCharWidth() * kMinimumChars) + m.left() + m.right(),
          fm.height() + m.top() + m.bottom()};
}

QSize ElidedLabel::sizeHint() const {
  const QFontMetrics fm = fontMetrics();
  const QMargins m = contentsMargins();
  return {fm.horizontalAdvance(text()) + m.left() + m.right(), fm.height() + m.top() + m.bottom()};
}

void ElidedLabel::paintEvent(QPaintEvent*) {
  QPainter p(this);
  QStyleOption opt;
  opt.initFrom(this);
  style()->drawItemText(&p, contentsRect(), int(alignment() | Qt::TextSingleLine), opt.palette, isEnabled(),
                        shownText(), foregroundRole());
}

void ElidedLabel::resizeEvent(QResizeEvent* event) {
  QLabel::resizeEvent(event);
  updateToolTip();
}

void ElidedLabel::setDetailToolTip(const QString& detail) {
  own_tooltip_ = detail;
  updateToolTip();
}

void ElidedLabel::updateToolTip() {
  if (isElided() && !text().isEmpty())
    setToolTip(own_tooltip_.isEmpty() ? text() : text() + "\n" + own_tooltip_);
  else
    setToolTip(own_tooltip_);
}

}  // namespace inferdesk::gui
