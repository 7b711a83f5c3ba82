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

namespace inferdesk::gui {

namespace {

constexpr int kLeft = 60, kTop = 22, kRight = 78, kBottom = 8, kBarWidth = 14;
const QColor kEmpty(236, 236, 236);

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
  static const std::array<QColor, 5> stops = {QColor(68, 1, 84), QColor(59, 82, 139),
                                              QColor(33, 145, 140), QColor(94, 201, 98),
                                              QColor(253, 231, 37)};
  t = std::clamp(t, 0.0, 1.0) * (stops.size() - 1);
  const size_t i = std::min(static_cast<size_t>(t), stops.size() - 2);
  const double f = t - static_cast<double>(i);
  const QColor& a = stops[i];
  const QColor& b = stops[i + 1];
  return QColor::fromRgbF(a.redF() + (b.redF() - a.redF()) * f,
                          a.greenF() + (b.greenF() - a.greenF()) * f,
                          a.blueF() + (b.blueF() - a.blueF()) * f);
}

void ExpertHeatmap::setCounts(int layers, int experts, const std::vector<int64_t>& counts) {
  if (layers <= 0 || experts <= 0 ||
      counts.size() != static_cast<size_t>(layers) * static_cast<size_t>(experts)) {
    clear();
    return;
  }
  layers_ = layers;
  experts_ = experts;
  counts_ = counts;
  layer_totals_.assign(static_cast<size_t>(layers), 0);
  min_ = counts.empty() ? 0 : counts.front();
  max_ = 0;
  for (int l = 0; l < layers; ++l)
    for (int e = 0; e < experts; ++e) {
      const int64_t c = counts_[static_cast<size_t>(l) * experts + e];
      layer_totals_[static_cast<size_t>(l)] += c;
      min_ = std::min(min_, c);
      max_ = std::max(max_, c);
    }
  update();
}

void ExpertHeatmap::clear() {
  layers_ = experts_ = 0;
  counts_.clear();
  layer_totals_.clear();
  min_ = max_ = 0;
  hover_ = {-1, -1};
  update();
}

int64_t ExpertHeatmap::count(int layer, int expert) const {
  if (layer < 0 || layer >= layers_ || expert < 0 || expert >= experts_) return 0;
  return counts_[static_cast<size_t>(layer) * experts_ + expert];
}

int ExpertHeatmap::nonZeroCells() const {
  return static_cast<int>(std::count_if(counts_.begin(), counts_.end(), [](int64_t c) { return c > 0; }));
}

QRect ExpertHeatmap::gridRect() const {
  return QRect(kLeft, kTop, std::max(1, width() - kLeft - kRight), std::max(1, height() - kTop - kBottom));
}

QRect ExpertHeatmap::cellRect(int layer, int expert) const {
  if (layers_ == 0) return {};
  const QRect g = gridRect();
  const double cw = double(g.width()) / experts_, ch = double(g.height()) / layers_;
  const int x0 = g.left() + static_cast<int>(std::floor(expert * cw));
  const int x1 = g.left() + static_cast<int>(std::floor((expert + 1) * cw));
  const int y0 = g.top() + static_cast<int>(std::floor(layer * ch));
  const int y1 = g.top() + static_cast<int>(std::floor((layer + 1) * ch));
  return QRect(x0, y0, std::max(1, x1 - x0), std::max(1, y1 - y0));
}

QPoint ExpertHeatmap::cellAt(const QPoint& pos) const {
  const QRect g = gridRect();
  if (layers_ == 0 || !g.contains(pos)) return {-1, -1};
  const int e = std::min(experts_ - 1, static_cast<int>((pos.x() - g.left()) * double(experts_) / g.width()));
  const int l = std::min(layers_ - 1, static_cast<int>((pos.y() - g.top()) * double(layers_) / g.height()));
  return {l, e};
}

QString ExpertHeatmap::cellText(int layer, int expert) const {
  if (layer < 0 || layer >= layers_ || expert < 0 || expert >= experts_) return {};
  const int64_t c = count(layer, expert);
  const int64_t total = layer_totals_[static_cast<size_t>(layer)];
  const double share = total > 0 ? 100.0 * double(c) / double(total) : 0.0;
  return tr("layer %1, expert %2: %3 tokens (%4% of the layer's routing)")
      .arg(layer)
      .arg(expert)
      .arg(QLocale().toString(static_cast<qlonglong>(c)))
      .arg(share, 0, 'f', 1);
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
  const QRect g = gridRect();
  for (int l = 0; l < layers_; ++l)
    for (int e = 0; e < experts_; ++e) {
      const int64_t c = count(l, e);
      p.fillRect(cellRect(l, e), c == 0 || max_ == 0 ? kEmpty : colorAt(double(c) / double(max_)));
    }
  // Thin separators where cells are large enough for them to help.
  if (g.width() / experts_ >= 6 && g.height() / layers_ >= 6) {
    p.setPen(QPen(palette().color(QPalette::Base), 1));
    for (int e = 1; e < experts_; ++e) p.drawLine(cellRect(0, e).left(), g.top(), cellRect(0, e).left(), g.bottom());
    for (int l = 1; l < layers_; ++l) p.drawLine(g.left(), cellRect(l, 0).top(), g.right(), cellRect(l, 0).top());
  }
  if (hover_.x() >= 0) {
    p.setPen(QPen(Qt::red, 2));
    p.drawRect(cellRect(hover_.x(), hover_.y()).adjusted(0, 0, -1, -1));
  }
  // Axis labels.
  p.setPen(palette().color(QPalette::Text));
  QFont small = font();
  small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
  p.setFont(small);
  const int row_step = label_step(layers_, g.height(), 14);
  for (int l = 0; l < layers_; l += row_step) {
    const QRect r = cellRect(l, 0);
    p.drawText(QRect(0, r.center().y() - 8, kLeft - 6, 16), Qt::AlignRight | Qt::AlignVCenter,
               tr("layer %1").arg(l));
  }
  const int col_step = label_step(experts_, g.width(), 24);
  for (int e = 0; e < experts_; e += col_step) {
    const QRect r = cellRect(0, e);
    p.drawText(QRect(r.center().x() - 14, 2, 28, kTop - 4), Qt::AlignCenter, QString::number(e));
  }
  p.drawText(QRect(0, 2, kLeft - 6, kTop - 4), Qt::AlignRight | Qt::AlignVCenter, tr("expert"));
  // Colour bar: max at the top, 0 at the bottom.
  const QRect bar(g.right() + 12, g.top(), kBarWidth, g.height());
  for (int y = 0; y < bar.height(); ++y)
    p.fillRect(QRect(bar.left(), bar.bottom() - y, bar.width(), 1), colorAt(double(y) / std::max(1, bar.height() - 1)));
  p.drawRect(bar.adjusted(0, 0, -1, -1));
  const QLocale loc;
  p.drawText(QRect(bar.right() + 4, bar.top() - 2, kRight - kBarWidth - 16, 16),
             Qt::AlignLeft | Qt::AlignTop, loc.toString(static_cast<qlonglong>(max_)));
  p.drawText(QRect(bar.right() + 4, bar.bottom() - 14, kRight - kBarWidth - 16, 16),
             Qt::AlignLeft | Qt::AlignBottom, "0");
}

bool ExpertHeatmap::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const QPoint cell = cellAt(help->pos());
    if (cell.x() >= 0)
      QToolTip::showText(help->globalPos(), cellText(cell.x(), cell.y()), this, cellRect(cell.x(), cell.y()));
    else
      QToolTip::hideText();
    return true;
  }
  return QWidget::event(event);
}

void ExpertHeatmap::mouseMoveEvent(QMouseEvent* event) {
  const QPoint cell = cellAt(event->position().toPoint());
  if (cell != hover_) {
    hover_ = cell;
    update();
  }
  QWidget::mouseMoveEvent(event);
}

void ExpertHeatmap::leaveEvent(QEvent* event) {
  hover_ = {-1, -1};
  update();
  QWidget::leaveEvent(event);
}

}  // namespace inferdesk::gui
