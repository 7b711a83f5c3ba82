// MarkdownView: a read-only, selectable rich-text view of one message that renders markdown
// (QTextDocument::setMarkdown, GitHub dialect) and grows to the height of its text, so a column
// of them scrolls as one page. Code blocks and inline code are set in the system's monospace
// font; code blocks get a tinted background and keep their line breaks. Links open externally.
#pragma once

#include <QTextBrowser>

namespace inferdesk::gui {

class MarkdownView : public QTextBrowser {
  Q_OBJECT

 public:
  explicit MarkdownView(QWidget* parent = nullptr);

  // Renders `markdown` (cheap to call again with the text grown by a streamed batch).
  void setMarkdownText(const QString& markdown);
  const QString& markdownText() const { return markdown_; }

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void resizeEvent(QResizeEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;  // scrolls the page, not this view

 private:
  void styleCode();
  void fitHeight();

  QString markdown_;
  int height_ = 0;
};

}  // namespace inferdesk::gui
