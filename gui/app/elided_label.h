// A one-line label that never asks for the width of its text: it shows as much as fits, ends with
// "…" when the text is longer, and carries the full text in its tooltip then. Titles, model names
// and paths use it, so no text can set the window's minimum width.
#pragma once

#include <QLabel>

namespace inferdesk::gui {

class ElidedLabel : public QLabel {
 public:
  explicit ElidedLabel(QWidget* parent = nullptr);
  explicit ElidedLabel(const QString& text, QWidget* parent = nullptr);

  void setFullText(const QString& text);  // plain text
  // A tooltip of the owner's; when the text is cut, the tooltip is the full text, then this.
  void setDetailToolTip(const QString& detail);
  // The text as drawn now (with "…" when cut).
  QString shownText() const;
  bool isElided() const { return shownText() != text(); }

  QSize minimumSizeHint() const override;
  QSize sizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  void updateToolTip();
  QString own_tooltip_;
};

}  // namespace inferdesk::gui
