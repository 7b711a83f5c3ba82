#include "gui/chat/markdown_view.h"

#include <QAbstractTextDocumentLayout>
#include <QDir>
#include <QDirIterator>
#include <QFontDatabase>
#include <QFontInfo>
#include <QGuiApplication>
#include <QPalette>
#include <QRegularExpression>
#include <QScrollBar>
#include <QStandardPaths>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocument>
#include <QTimer>
#include <QVBoxLayout>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace inferdesk::gui {

namespace {

constexpr qint64 kMinStreamRenderMs = 100;

bool is_code_block(const QTextBlock& block) {
  const QTextBlockFormat f = block.blockFormat();
  return f.hasProperty(QTextFormat::BlockCodeFence) || f.hasProperty(QTextFormat::BlockCodeLanguage);
}

// A fixed-pitch font file that is on disk but not in Qt's font database (seen where fontconfig
// lists no monospace family to Qt), added as an application font. Once per process: Qt's font
// database is process-wide, and adding the same file again would only add it twice.
QString registered_mono_family() {
  static const QString family = [] {
    QStringList dirs = QStandardPaths::standardLocations(QStandardPaths::FontsLocation);
    dirs << "/usr/share/fonts"
         << "/usr/local/share/fonts";
    const QStringList files = {"DejaVuSansMono.ttf", "LiberationMono-Regular.ttf", "NotoSansMono-Regular.ttf"};
    for (const QString& dir : dirs) {
      QDirIterator it(dir, files, QDir::Files, QDirIterator::Subdirectories);
      while (it.hasNext()) {
        const QStringList added = QFontDatabase::applicationFontFamilies(QFontDatabase::addApplicationFont(it.next()));
        if (!added.isEmpty()) return added.first();
      }
    }
    return QString();
  }();
  return family;
}

}  // namespace

// The system's fixed-width font; else fontconfig's "monospace" alias; else an installed
// fixed-pitch family by name. The offscreen platform reports the proportional default, and where
// the alias does not resolve (a minimal fontconfig set-up) "monospace" matches a proportional font.
QFont fixedPitchFont() {
  QFont f = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  if (QFontInfo(f).fixedPitch()) return f;
  f = QFont("monospace");
  f.setStyleHint(QFont::TypeWriter);
  f.setFixedPitch(true);
  if (QFontInfo(f).fixedPitch()) return f;
  const QStringList families = QFontDatabase::families();
  for (const char* known : {"DejaVu Sans Mono", "Liberation Mono", "Noto Sans Mono", "Cousine"})
    if (families.contains(known) && QFontDatabase::isFixedPitch(known)) return QFont(known);
  for (const QString& family : families)
    if (QFontDatabase::isFixedPitch(family) && !QFontDatabase::isPrivateFamily(family)) return QFont(family);
  if (const QString added = registered_mono_family(); !added.isEmpty()) return QFont(added);
  return f;
}

MarkdownView::MarkdownView(QWidget* parent) : QTextBrowser(parent) {
  setOpenExternalLinks(true);
  setFrameShape(QFrame::NoFrame);
  setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setLineWrapMode(QTextEdit::WidgetWidth);
  setWordWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
  setTextInteractionFlags(Qt::TextBrowserInteraction);
  // Transparent over the message frame, without a style sheet (one would freeze the palette).
  viewport()->setAutoFillBackground(false);
  document()->setDocumentMargin(2);
  connect(document()->documentLayout(), &QAbstractTextDocumentLayout::documentSizeChanged, this,
          [this] { fitHeight(); });
  pending_ = new QTimer(this);
  pending_->setSingleShot(true);
  connect(pending_, &QTimer::timeout, this, &MarkdownView::render);
}

void MarkdownView::setMarkdownText(const QString& markdown, bool coalesce) {
  markdown_ = markdown;
  if (markdown_ == rendered_ && !document()->isEmpty()) {
    pending_->stop();
    return;
  }
  const qint64 interval = std::max<qint64>(kMinStreamRenderMs, 3 * render_cost_ms_);
  if (!coalesce || !since_render_.isValid() || since_render_.elapsed() >= interval) {
    render();
  } else if (!pending_->isActive()) {
    pending_->start(static_cast<int>(interval - since_render_.elapsed()));
  }
}

void MarkdownView::render() {
  pending_->stop();
  QElapsedTimer cost;
  cost.start();
  rendered_ = markdown_;
  document()->setMarkdown(rendered_, QTextDocument::MarkdownDialectGitHub);
  styleCode();
  fitHeight();
  render_cost_ms_ = cost.elapsed();
  since_render_.start();
}

void MarkdownView::styleCode() {
  const QFont mono = fixedPitchFont();
  // The application's palette: this view's own Base is transparent (it sits on the message frame).
  const QColor base = QGuiApplication::palette().color(QPalette::Base);
  const QColor text = QGuiApplication::palette().color(QPalette::Text);
  const QColor tint = QColor::fromRgbF(base.redF() * 0.88f + text.redF() * 0.12f,
                                       base.greenF() * 0.88f + text.greenF() * 0.12f,
                                       base.blueF() * 0.88f + text.blueF() * 0.12f);
  QTextCharFormat code_chars;
  code_chars.setFontFamilies(mono.families());
  code_chars.setFontFixedPitch(true);
  code_chars.setFontStyleHint(QFont::TypeWriter);
  QTextCharFormat inline_chars = code_chars;
  inline_chars.setBackground(tint);
  // Ranges first, formats after: merging formats while walking a block's fragments would merge and
  // split the fragments under the iterator and skip some of them.
  struct Range {
    int begin, end;
    bool block;
  };
  std::vector<Range> ranges;
  for (QTextBlock b = document()->begin(); b.isValid(); b = b.next()) {
    if (is_code_block(b)) {
      ranges.push_back({b.position(), b.position() + b.length() - 1, true});
      continue;
    }
    // Inline `code`: the importer marks it fixed-pitch.
    for (auto it = b.begin(); !it.atEnd(); ++it) {
      const QTextFragment frag = it.fragment();
      if (frag.isValid() && frag.charFormat().fontFixedPitch())
        ranges.push_back({frag.position(), frag.position() + frag.length(), false});
    }
  }
  QTextCursor cursor(document());
  cursor.beginEditBlock();
  for (const Range& r : ranges) {
    cursor.setPosition(r.begin);
    if (r.block) {
      QTextBlockFormat bf = cursor.blockFormat();
      bf.setBackground(tint);
      bf.setLeftMargin(8);
      bf.setRightMargin(8);
      bf.setNonBreakableLines(false);  // wrap long code lines instead of widening the page
      cursor.setBlockFormat(bf);
      cursor.mergeBlockCharFormat(code_chars);  // the block's own format: its empty lines, its height
    }
    cursor.setPosition(r.end, QTextCursor::KeepAnchor);
    cursor.mergeCharFormat(r.block ? code_chars : inline_chars);
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

void MarkdownView::changeEvent(QEvent* event) {
  QTextBrowser::changeEvent(event);
  if (event->type() == QEvent::PaletteChange && !rendered_.isEmpty()) render();
}

namespace {

// A fence line: up to 3 spaces, then ``` or ~~~ (returns the fence character, or 0).
QChar fence_char(QStringView line) {
  int i = 0;
  while (i < 3 && i < line.size() && line[i] == ' ') ++i;
  const QStringView rest = line.mid(i);
  if (rest.startsWith(u"```")) return '`';
  if (rest.startsWith(u"~~~")) return '~';
  return QChar();
}

}  // namespace

std::vector<MarkdownPiece> splitMarkdown(const QString& text, int minChars, int maxChars) {
  std::vector<MarkdownPiece> pieces;
  qsizetype start = 0, pos = 0;
  QChar fence;         // set while inside a fenced block
  QString fence_line;  // the line that opened it
  QString prefix;      // the next piece's prefix
  bool blank_before = false;
  auto cut = [&](qsizetype at) {
    MarkdownPiece p{text.mid(start, at - start), prefix, QString()};
    if (!fence.isNull()) p.suffix = (p.text.endsWith('\n') ? "" : "\n") + QString(3, fence) + "\n";
    pieces.push_back(std::move(p));
    prefix = fence.isNull() ? QString() : fence_line + "\n";
    start = at;
  };
  while (pos < text.size()) {
    const qsizetype nl = text.indexOf('\n', pos);
    const qsizetype end = nl < 0 ? text.size() : nl;
    const QStringView line = QStringView(text).mid(pos, end - pos);
    const bool column0 = !line.isEmpty() && line[0] != ' ' && line[0] != '\t';
    if (pos > start && blank_before && fence.isNull() && column0 && pos - start >= minChars)
      cut(pos);  // a block boundary
    else if (pos > start && pos - start >= maxChars)
      cut(pos);            // a long paragraph or code block: cut at a line start
    if (fence.isNull()) {  // one long line: cut after a space
      for (qsizetype ws = pos; end - start > maxChars;) {
        ws = text.indexOf(' ', std::max(ws, start + maxChars));
        if (ws < 0 || ws >= end) break;
        cut(ws + 1);
      }
    }
    if (nl < 0) break;  // an unfinished last line decides nothing more
    const QChar f = fence_char(line);
    if (!f.isNull() && fence.isNull()) {
      fence = f;
      fence_line = line.trimmed().toString();
    } else if (!f.isNull() && f == fence) {
      fence = QChar();
    }
    blank_before = line.trimmed().isEmpty();
    pos = nl + 1;
  }
  if (start < text.size() || pieces.empty()) pieces.push_back(MarkdownPiece{text.mid(start), prefix, QString()});
  return pieces;
}

MarkdownBody::MarkdownBody(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

void MarkdownBody::setMarkdownText(const QString& markdown, bool coalesce) {
  const std::vector<MarkdownPiece> pieces = splitMarkdown(markdown, kSegmentChars, kMaxSegmentChars);
  while (views_.size() > static_cast<qsizetype>(pieces.size())) delete views_.takeLast();
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (static_cast<qsizetype>(i) == views_.size()) {
      auto* view = new MarkdownView(this);
      layout()->addWidget(view);
      views_.append(view);
    }
    // Complete pieces keep their rendering; the growing last one is coalesced while streaming.
    const bool last = i + 1 == pieces.size();
    views_[static_cast<qsizetype>(i)]->setMarkdownText(pieces[i].renderText(), coalesce && last);
  }
}

QString MarkdownBody::toPlainText() const {
  QStringList parts;
  for (const MarkdownView* v : views_) parts << v->toPlainText();
  return parts.join("\n\n");
}

QString preserveLineBreaks(const QString& markdown) {
  const QStringList lines = markdown.split('\n');
  QStringList out;
  QChar fence;
  for (qsizetype i = 0; i < lines.size(); ++i) {
    QString line = lines[i];
    const QChar f = fence_char(line);
    if (!f.isNull() && (fence.isNull() || f == fence)) {
      fence = fence.isNull() ? f : QChar();
    } else if (fence.isNull() && i + 1 < lines.size() && !line.trimmed().isEmpty() &&
               !lines[i + 1].trimmed().isEmpty() && fence_char(lines[i + 1]).isNull() && !line.endsWith("  ") &&
               !line.endsWith('\\')) {
      line += "  ";  // a hard line break (two spaces: harmless where a block ends, unlike '\\')
    }
    out << line;
  }
  return out.join('\n');
}

QString plainTextOfMarkdown(const QString& markdown) {
  QString t = markdown;
  static const QRegularExpression image(R"(!\[([^\]]*)\]\([^)]*\))");
  static const QRegularExpression link(R"(\[([^\]]*)\]\([^)]*\))");
  static const QRegularExpression line_marks(R"((^|\n)[ \t]*(#{1,6}[ \t]+|>[ \t]?|[-*+][ \t]+|\d+[.)][ \t]+))");
  static const QRegularExpression fences(R"(```[^\n]*|~~~[^\n]*)");
  static const QRegularExpression emphasis(R"(\*\*|__|~~|[*`])");
  t.replace(image, "\\1");
  t.replace(link, "\\1");
  t.replace(fences, " ");
  t.replace(line_marks, "\\1");
  t.replace(emphasis, QString());
  static const QRegularExpression underscores(R"((^|\s)_(\S[^_]*)_(?=\s|$))");
  t.replace(underscores, "\\1\\2");
  return t.simplified();
}

}  // namespace inferdesk::gui
