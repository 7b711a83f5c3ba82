#include "gui/chat/markdown_view.h"

#include <QAbstractTextDocumentLayout>
#include <QFontDatabase>
#include <QPalette>
#include <QScrollBar>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocument>
#include <QWheelEvent>

#include <cmath>

namespace inferdesk::gui {

namespace {

bool is_code_block(const QTextBlock& block) {
  const QTextBlockFormat f = block.blockFormat();
  return f.hasProperty(QTextFormat::BlockCodeFence) || f.hasProperty(QTextFormat::BlockCodeLanguage) ||
         block.charFormat().fontFixedPitch();
}

}  // namespace

MarkdownView::MarkdownView(QWidget* parent) : QTextBrowser(parent) {
  setOpenExternalLinks(true);
  setFrameShape(QFrame::NoFrame);
  setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setLineWrapMode(QTextEdit::WidgetWidth);
  setWordWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
  setTextInteractionFlags(Qt::TextBrowserInteraction);
  viewport()->setAutoFillBackground(false);
  setStyleSheet("QTextBrowser { background: transparent; }");
  document()->setDocumentMargin(2);
  connect(document()->documentLayout(), &QAbstractTextDocumentLayout::documentSizeChanged, this,
          [this] { fitHeight(); });
}

void MarkdownView::setMarkdownText(const QString& markdown) {
  if (markdown == markdown_ && !document()->isEmpty()) return;
  markdown_ = markdown;
  document()->setMarkdown(markdown, QTextDocument::MarkdownDialectGitHub);
  styleCode();
  fitHeight();
}

void MarkdownView::styleCode() {
  const QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  const QColor base = palette().color(QPalette::Base);
  const QColor tint = base.lightness() > 128 ? QColor(0xf0, 0xf1, 0xf4) : base.lighter(140);
  QTextCursor cursor(document());
  cursor.beginEditBlock();
  for (QTextBlock b = document()->begin(); b.isValid(); b = b.next()) {
    if (!is_code_block(b)) continue;
    QTextBlockFormat bf = b.blockFormat();
    bf.setBackground(tint);
    bf.setLeftMargin(8);
    bf.setRightMargin(8);
    bf.setNonBreakableLines(false);  // wrap long code lines instead of clipping them
    cursor.setPosition(b.position());
    cursor.setBlockFormat(bf);
    cursor.setPosition(b.position());
    cursor.setPosition(b.position() + b.length() - 1, QTextCursor::KeepAnchor);
    QTextCharFormat cf;
    cf.setFont(mono);
    cf.setFontFixedPitch(true);
    cursor.mergeCharFormat(cf);
  }
  cursor.endEditBlock();
}

void MarkdownView::fitHeight() {
  document()->setTextWidth(viewport()->width());
  const int h = static_cast<int>(std::ceil(document()->size().height())) + frameWidth() * 2 + 2;
  if (h == height_) return;
  height_ = h;
  setFixedHeight(h);
  updateGeometry();
}

QSize MarkdownView::sizeHint() const { return {QTextBrowser::sizeHint().width(), std::max(height_, 20)}; }

QSize MarkdownView::minimumSizeHint() const { return {60, std::max(height_, 20)}; }

void MarkdownView::resizeEvent(QResizeEvent* event) {
  QTextBrowser::resizeEvent(event);
  fitHeight();
}

void MarkdownView::wheelEvent(QWheelEvent* event) { event->ignore(); }

}  // namespace inferdesk::gui
