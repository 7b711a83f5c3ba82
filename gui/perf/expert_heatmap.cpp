#include "gui/perf/expert_heatmap.h"

#include <QEvent>
#include <QHelpEvent>
#include <QLocale>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <array>
#include <cmath>

#include "gui/app/theme.h"

namespace inferdesk::gui {

namespace {

constexpr int kLeft = 60, kTop = 22, kRight = 92, kBottom = 8, kBarWidth = 14, kSharedGap = 6;

// Step between labelled rows/columns so labels never overlap.
int label_step(int n, double pixels, double min_gap) {
  if (n <= 0 || pixels <= 0) return 1;
  const int fit = std::max(1, static_cast<int>(pixels / min_gap));
  return std::max(1, (n + fit - 1) / fit);
}

}  // namespace

ExpertHeatmap::ExpertHeatmap(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setAttribute(Qt::WA_OpaquePaintEvent, false);
}

QColor ExpertHeatmap::colorAt(double t) {
  // A perceptually ordered dark-blue → teal → yellow scale (viridis-like stops).
  static const std::array<QColor, 5> stops = {QColor(68, 1, 84), QColor(59, 82, 139), QColor(33, 145, 140),
                                              QColor(94, 201, 98), QColor(253, 231, 37)};
  t = std::clamp(t, 0.0, 1.0) * (stops.size() - 1);
  const size_t i = std::min(static_cast<size_t>(t), stops.size() - 2);
  const double f = t - static_cast<double>(i);
  const QColor& a = stops[i];
  const QColor& b = stops[i + 1];
  return QColor::fromRgbF(a.redF() + (b.redF() - a.redF()) * f, a.greenF() + (b.greenF() - a.greenF()) * f,
                          a.blueF() + (b.blueF() - a.blueF()) * f);
}

void ExpertHeatmap::setShape(int layers, int experts, const std::vector<bool>& moeLayers, bool sharedExpert,
                             int expertsPerToken) {
  if (layers <= 0 || experts <= 0) {
    clear();
    return;
  }
  layers_ = layers;
  experts_ = experts;
  moe_layers_ = moeLayers.size() == static_cast<size_t>(layers) ? moeLayers : std::vector<bool>(layers, true);
  shared_ = sharedExpert && expertsPerToken > 0;
  k_ = expertsPerToken;
  counts_.assign(static_cast<size_t>(layers) * experts, 0);
  layer_totals_.assign(static_cast<size_t>(layers), 0);
  max_ = 0;
  update();
}

void ExpertHeatmap::setCounts(int layers, int experts, const std::vector<int64_t>& counts) {
  if (layers <= 0 || experts <= 0 || counts.size() != static_cast<size_t>(layers) * static_cast<size_t>(experts)) {
    clear();
    return;
  }
  if (layers != layers_ || experts != experts_) setShape(layers, experts, {}, false, 0);
  counts_ = counts;
  max_ = 0;
  for (int l = 0; l < layers; ++l) {
    int64_t total = 0;
    for (int e = 0; e < experts; ++e) total += counts_[static_cast<size_t>(l) * experts + e];
    layer_totals_[static_cast<size_t>(l)] = total;
    for (int c = 0; c < columns(); ++c)
      if (isMoeLayer(l)) max_ = std::max(max_, count(l, c));
  }
  update();
  // While the mouse rests on a cell its tooltip shows the count as it is now, not as it was when
  // the mouse arrived. Qt hides a tooltip on any focus change in the application (QTipLabel
  // watches every FocusIn / FocusOut / WindowActivate), and a chart on the same page gives its
  // scene focus whenever an axis gains a grid line: a tooltip hidden that way comes back with
  // the next change. One the user dismissed (leaving the cell, a click, the wheel, another
  // window) is not shown again; one that expired stays hidden until its count changes.
  if (tip_cell_.x() >= 0 && (QToolTip::isVisible() || cellText(tip_cell_.x(), tip_cell_.y()) != shown_tip_))
    showTip(tip_pos_, tip_cell_);
}

void ExpertHeatmap::clear() {
  layers_ = experts_ = k_ = 0;
  shared_ = false;
  moe_layers_.clear();
  counts_.clear();
  layer_totals_.clear();
  max_ = 0;
  hover_ = tip_cell_ = {-1, -1};
  shown_tip_.clear();
  update();
}

bool ExpertHeatmap::isMoeLayer(int layer) const {
  return layer >= 0 && layer < layers_ && moe_layers_[static_cast<size_t>(layer)];
}

int ExpertHeatmap::moeLayerCount() const {
  return static_cast<int>(std::count(moe_layers_.begin(), moe_layers_.end(), true));
}

int64_t ExpertHeatmap::count(int layer, int expert) const {
  if (layer < 0 || layer >= layers_ || expert < 0 || expert >= columns()) return 0;
  if (expert == experts_) return k_ > 0 ? layer_totals_[static_cast<size_t>(layer)] / k_ : 0;  // every token
  return counts_[static_cast<size_t>(layer) * experts_ + expert];
}

int64_t ExpertHeatmap::totalRouted() const {
  int64_t t = 0;
  for (int64_t c : counts_) t += c;
  return t;
}

int ExpertHeatmap::nonZeroCells() const {
  return static_cast<int>(std::count_if(counts_.begin(), counts_.end(), [](int64_t c) { return c > 0; }));
}

QRect ExpertHeatmap::gridRect() const {
  return QRect(kLeft, kTop, std::max(1, width() - kLeft - kRight), std::max(1, height() - kTop - kBottom));
}

QRect ExpertHeatmap::cellRect(int layer, int column) const {
  if (layers_ == 0) return {};
  QRect g = gridRect();
  if (shared_) g.setWidth(std::max(1, g.width() - kSharedGap));
  const double cw = double(g.width()) / columns(), ch = double(g.height()) / layers_;
  const int gap = shared_ && column == experts_ ? kSharedGap : 0;
  const int x0 = g.left() + gap + static_cast<int>(std::floor(column * cw));
  const int x1 = g.left() + gap + static_cast<int>(std::floor((column + 1) * cw));
  const int y0 = g.top() + static_cast<int>(std::floor(layer * ch));
  const int y1 = g.top() + static_cast<int>(std::floor((layer + 1) * ch));
  return QRect(x0, y0, std::max(1, x1 - x0), std::max(1, y1 - y0));
}

QPoint ExpertHeatmap::cellAt(const QPoint& pos) const {
  if (layers_ == 0 || !gridRect().contains(pos)) return {-1, -1};
  for (int l = 0; l < layers_; ++l)
    for (int c = 0; c < columns(); ++c)
      if (cellRect(l, c).contains(pos)) return {l, c};
  return {-1, -1};
}

QString ExpertHeatmap::cellText(int layer, int column) const {
  if (layer < 0 || layer >= layers_ || column < 0 || column >= columns()) return {};
  if (!isMoeLayer(layer)) return tr("layer %1: dense layer (an MLP every token goes through; no experts)").arg(layer);
  const int64_t c = count(layer, column);
  const QString n = QLocale().toString(static_cast<qlonglong>(c));
  if (column == experts_) return tr("layer %1, shared expert: %2 tokens (every token of the layer)").arg(layer).arg(n);
  const int64_t total = layer_totals_[static_cast<size_t>(layer)];
  const double share = total > 0 ? 100.0 * double(c) / double(total) : 0.0;
  return tr("layer %1, expert %2: %3 tokens (%4% of the layer's routing)")
      .arg(layer)
      .arg(column)
      .arg(n)
      .arg(share, 0, 'f', 1);
}

void ExpertHeatmap::paintCells(QPainter& p) const {
  const StatusColors colors = statusColors(palette());
  for (int l = 0; l < layers_; ++l) {
    if (!isMoeLayer(l)) {  // one hatched band across the row
      const QRect band = cellRect(l, 0).united(cellRect(l, columns() - 1));
      p.fillRect(band, colors.dense);
      p.fillRect(band, QBrush(palette().color(QPalette::Mid), Qt::BDiagPattern));
      p.setPen(palette().color(QPalette::Text));
      p.drawText(band, Qt::AlignCenter, tr("dense layer"));
      continue;
    }
    for (int c = 0; c < columns(); ++c) {
      const int64_t n = count(l, c);
      p.fillRect(cellRect(l, c), n == 0 || max_ == 0 ? colors.empty : colorAt(double(n) / double(max_)));
    }
  }
  const QRect g = gridRect();
  if (g.width() / std::max(1, columns()) >= 6 && g.height() / layers_ >= 6) {  // separators help big cells
    p.setPen(QPen(palette().color(QPalette::Base), 1));
    for (int c = 1; c < columns(); ++c) p.drawLine(cellRect(0, c).left(), g.top(), cellRect(0, c).left(), g.bottom());
    for (int l = 1; l < layers_; ++l) p.drawLine(g.left(), cellRect(l, 0).top(), g.right(), cellRect(l, 0).top());
  }
  if (hover_.x() >= 0 && isMoeLayer(hover_.x())) {
    p.setPen(QPen(palette().color(QPalette::Highlight), 2));
    p.drawRect(cellRect(hover_.x(), hover_.y()).adjusted(0, 0, -1, -1));
  }
  if (totalRouted() == 0) {  // the grid is there; the counts are not yet
    QRect note = g.adjusted(4, 4, -4, -4);
    p.fillRect(QRect(note.left(), note.center().y() - 14, note.width(), 28), palette().brush(QPalette::Base));
    p.setPen(palette().color(QPalette::Text));
    p.drawText(note, Qt::AlignCenter | Qt::TextWordWrap,
               tr("No tokens routed yet: generate to see which experts each layer uses."));
  }
}

void ExpertHeatmap::paintLabels(QPainter& p) const {
  const QRect g = gridRect();
  p.setPen(palette().color(QPalette::Text));
  QFont small = font();
  small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
  p.setFont(small);
  const int row_step = label_step(layers_, g.height(), 14);
  for (int l = 0; l < layers_; l += row_step) {
    const QRect r = cellRect(l, 0);
    p.drawText(QRect(0, r.center().y() - 8, kLeft - 6, 16), Qt::AlignRight | Qt::AlignVCenter, tr("layer %1").arg(l));
  }
  const int col_step = label_step(experts_, g.width(), 24);
  for (int e = 0; e < experts_; e += col_step) {
    const QRect r = cellRect(0, e);
    p.drawText(QRect(r.center().x() - 14, 2, 28, kTop - 4), Qt::AlignCenter, QString::number(e));
  }
  if (shared_) {
    const QRect r = cellRect(0, experts_);
    p.drawText(QRect(r.center().x() - 20, 2, 40, kTop - 4), Qt::AlignCenter, tr("shared"));
  }
  p.drawText(QRect(0, 2, kLeft - 6, kTop - 4), Qt::AlignRight | Qt::AlignVCenter, tr("expert"));
  // Colour bar, in tokens: the largest count at the top, 0 at the bottom.
  const QRect bar(g.right() + 12, g.top() + 14, kBarWidth, std::max(10, g.height() - 14));
  for (int y = 0; y < bar.height(); ++y)
    p.fillRect(QRect(bar.left(), bar.bottom() - y, bar.width(), 1), colorAt(double(y) / std::max(1, bar.height() - 1)));
  p.drawRect(bar.adjusted(0, 0, -1, -1));
  const QLocale loc;
  p.drawText(QRect(bar.left() - 6, g.top() - 2, kRight - 8, 14), Qt::AlignLeft | Qt::AlignTop, tr("tokens"));
  p.drawText(QRect(bar.right() + 4, bar.top() - 2, kRight - kBarWidth - 16, 16), Qt::AlignLeft | Qt::AlignTop,
             loc.toString(static_cast<qlonglong>(max_)));
  p.drawText(QRect(bar.right() + 4, bar.bottom() - 14, kRight - kBarWidth - 16, 16), Qt::AlignLeft | Qt::AlignBottom,
             "0");
}

void ExpertHeatmap::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  if (layers_ == 0) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap,
               tr("Expert routing appears here for mixture-of-experts models."));
    return;
  }
  paintCells(p);
  paintLabels(p);
}

void ExpertHeatmap::showTip(const QPoint& globalPos, const QPoint& cell) {
  tip_cell_ = cell;
  tip_pos_ = globalPos;
  shown_tip_ = cellText(cell.x(), cell.y());
  QToolTip::showText(globalPos, shown_tip_, this, cellRect(cell.x(), cell.y()));
}

bool ExpertHeatmap::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const QPoint cell = cellAt(help->pos());
    if (cell.x() >= 0) {
      showTip(help->globalPos(), cell);
    } else {
      tip_cell_ = {-1, -1};
      shown_tip_.clear();
      QToolTip::hideText();
    }
    return true;
  }
  if (event->type() == QEvent::WindowDeactivate) forgetTip();  // the user went to another window
  return QWidget::event(event);
}

void ExpertHeatmap::mouseMoveEvent(QMouseEvent* event) {
  const QPoint cell = cellAt(event->position().toPoint());
  if (cell != hover_) {
    hover_ = cell;
    if (cell != tip_cell_) tip_cell_ = {-1, -1};  // a new cell: its tooltip comes with the next ToolTip event
    update();
  }
  QWidget::mouseMoveEvent(event);
}

void ExpertHeatmap::forgetTip() {
  tip_cell_ = {-1, -1};
  shown_tip_.clear();
}

void ExpertHeatmap::mousePressEvent(QMouseEvent* event) {
  forgetTip();  // a click dismisses the tooltip (Qt hides it): it stays away until the next hover
  QWidget::mousePressEvent(event);
}

void ExpertHeatmap::wheelEvent(QWheelEvent* event) {
  forgetTip();
  QWidget::wheelEvent(event);
}

void ExpertHeatmap::hideEvent(QHideEvent* event) {
  forgetTip();
  QWidget::hideEvent(event);
}

void ExpertHeatmap::leaveEvent(QEvent* event) {
  hover_ = {-1, -1};
  forgetTip();
  update();
  QWidget::leaveEvent(event);
}

}  // namespace inferdesk::gui
