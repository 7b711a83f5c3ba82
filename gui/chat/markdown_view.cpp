#include "gui/chat/markdown_view.h"

#include <QAbstractTextDocumentLayout>
#include <QFontDatabase>
#include <QFontInfo>
#include <QGuiApplication>
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
  return f.hasProperty(QTextFormat::BlockCodeFence) || f.hasProperty(QTextFormat::BlockCodeLanguage);
}

// The system's fixed-width font, or fontconfig's "monospace" where the platform reports none
// (the offscreen platform gives the proportional default).
QFont mono_font() {
  QFont f = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  if (QFontInfo(f).fixedPitch()) return f;
  f = QFont("monospace");
  f.setStyleHint(QFont::TypeWriter);
  f.setFixedPitch(true);
  return f;
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
  const QFont mono = mono_font();
  // The application's palette: this view's own Base is transparent (it sits on the message frame).
  const QColor base = QGuiApplication::palette().color(QPalette::Base);
  const QColor text = QGuiApplication::palette().color(QPalette::Text);
  const QColor tint = QColor::fromRgbF(base.redF() * 0.92f + text.redF() * 0.08f,
                                       base.greenF() * 0.92f + text.greenF() * 0.08f,
                                       base.blueF() * 0.92f + text.blueF() * 0.08f);
  QTextCharFormat code_chars;
  code_chars.setFontFamilies(mono.families());
  code_chars.setFontFixedPitch(true);
  QTextCharFormat inline_chars = code_chars;
  inline_chars.setBackground(tint);
  QTextCursor cursor(document());
  cursor.beginEditBlock();
  for (QTextBlock b = document()->begin(); b.isValid(); b = b.next()) {
    if (is_code_block(b)) {
      QTextBlockFormat bf = b.blockFormat();
      bf.setBackground(tint);
      bf.setLeftMargin(8);
      bf.setRightMargin(8);
      bf.setNonBreakableLines(false);  // wrap long code lines instead of clipping them
      cursor.setPosition(b.position());
      cursor.setBlockFormat(bf);
      cursor.setPosition(b.position() + b.length() - 1, QTextCursor::KeepAnchor);
      cursor.mergeCharFormat(code_chars);
      continue;
    }
    // Inline `code`: the importer marks it fixed-pitch.
    for (auto it = b.begin(); !it.atEnd(); ++it) {
      const QTextFragment frag = it.fragment();
      if (!frag.isValid() || !frag.charFormat().fontFixedPitch()) continue;
      cursor.setPosition(frag.position());
      cursor.setPosition(frag.position() + frag.length(), QTextCursor::KeepAnchor);
      cursor.mergeCharFormat(inline_chars);
    }
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
