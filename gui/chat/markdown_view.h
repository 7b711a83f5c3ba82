// Markdown for messages. MarkdownView: a read-only, selectable rich-text view that renders
// markdown (QTextDocument::setMarkdown, GitHub dialect) and grows to the height of its text, so a
// column of them scrolls as one page. Code blocks and inline code are set in a monospace font;
// code blocks get a tinted background. Links open externally.
//
// MarkdownBody: one message as a column of MarkdownViews, one per piece of about
// kSegmentChars characters, cut at blank lines outside code blocks (splitMarkdown). Rendering
// costs time in proportion to the text (several ms per 1000 characters), so a streamed reply
// re-renders only its last piece as it grows, and the UI thread stays responsive however long
// the reply gets.
#pragma once

#include <QElapsedTimer>
#include <QFont>
#include <QList>
#include <QTextBrowser>

#include <vector>

class QTimer;

namespace inferdesk::gui {

class MarkdownView : public QTextBrowser {
  Q_OBJECT

 public:
  explicit MarkdownView(QWidget* parent = nullptr);

  // Renders `markdown`. With `coalesce` (a reply still streaming), renders at most every
  // ~100 ms (longer when rendering this text takes longer), the last text always shown; without
  // it, renders now.
  void setMarkdownText(const QString& markdown, bool coalesce = false);
  const QString& markdownText() const { return markdown_; }

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void resizeEvent(QResizeEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;  // scrolls the page, not this view
  void changeEvent(QEvent* event) override;      // a new palette: code tints follow it

 private:
  void render();
  void styleCode();
  void fitHeight();

  QString markdown_;  // the text asked for
  QString rendered_;  // the text shown
  int height_ = 0;
  QTimer* pending_ = nullptr;
  QElapsedTimer since_render_;
  qint64 render_cost_ms_ = 0;
};

// One piece of a message. `text` pieces concatenate to the whole message; a piece cut inside a
// fenced code block is rendered with the fence reopened before it (`prefix`) and closed after the
// piece before it (`suffix`).
struct MarkdownPiece {
  QString text;
  QString prefix;
  QString suffix;
  QString renderText() const { return prefix + text + suffix; }
};

// Cuts `text` into pieces: after a blank line that is outside a fenced code block and followed by
// a line starting at column 0 (so indented list continuations and indented code stay with what
// they belong to), once the piece holds at least `minChars` characters; and, where no such line
// comes, at the first line start (or, in one long line, after the first space) past `maxChars`.
// Earlier cuts never move as text is appended.
std::vector<MarkdownPiece> splitMarkdown(const QString& text, int minChars, int maxChars);

// The user's own line breaks kept as markdown hard breaks (a single newline is a space in
// markdown, so Shift+Enter lines would run together); fenced code is left as it is.
QString preserveLineBreaks(const QString& markdown);

// Text of a markdown snippet without its markers (for titles): emphasis, code ticks, heading and
// quote marks, list bullets, links shown as their text; whitespace collapsed.
QString plainTextOfMarkdown(const QString& markdown);

// A fixed-pitch font for code, also where the platform's FixedFont is proportional.
QFont fixedPitchFont();

class MarkdownBody : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kSegmentChars = 500;
  static constexpr int kMaxSegmentChars = 1000;  // the streaming tail re-renders in well under 50 ms

  explicit MarkdownBody(QWidget* parent = nullptr);
  // As MarkdownView::setMarkdownText; only pieces whose text changed are rendered again.
  void setMarkdownText(const QString& markdown, bool coalesce = false);
  QString toPlainText() const;  // of what is rendered, pieces joined by a blank line
  const QList<MarkdownView*>& segments() const { return views_; }

 private:
  QList<MarkdownView*> views_;
};

}  // namespace inferdesk::gui
