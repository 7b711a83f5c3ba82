#include "gui/perf/time_series_chart.h"

#include <QPen>

#include <algorithm>
#include <cmath>

namespace inferdesk::gui {

TimeSeriesChart::TimeSeriesChart(const QString& title, const QString& xLabel,
                                 const QString& yLabel, double windowX, QWidget* parent)
    : QChartView(parent), window_(windowX) {
  chart_ = new QChart();
  chart_->setTitle(title);
  chart_->legend()->setAlignment(Qt::AlignBottom);
  chart_->setMargins(QMargins(4, 4, 4, 4));
  chart_->setBackgroundRoundness(0);
  x_ = new QValueAxis();
  x_->setTitleText(xLabel);
  y_ = new QValueAxis();
  y_->setTitleText(yLabel);
  chart_->addAxis(x_, Qt::AlignBottom);
  chart_->addAxis(y_, Qt::AlignLeft);
  clearAll();
  setChart(chart_);  // the view owns the chart
  setRenderHint(QPainter::Antialiasing);
  setMinimumSize(320, 200);
}

QLineSeries* TimeSeriesChart::addSeries(const QString& name, const QColor& color) {
  auto* s = new QLineSeries();
  s->setName(name);
  QPen pen(color);
  pen.setWidthF(2.0);
  s->setPen(pen);
  chart_->addSeries(s);
  s->attachAxis(x_);
  s->attachAxis(y_);
  lines_.push_back({s, {}, false});
  chart_->legend()->setVisible(lines_.size() > 1);
  return s;
}

void TimeSeriesChart::append(QLineSeries* series, double x, double y) {
  if (!std::isfinite(x) || !std::isfinite(y)) return;
  for (Line& l : lines_) {
    if (l.series != series) continue;
    l.points.append(QPointF(x, y));
    l.dirty = true;
    latest_x_ = std::max(latest_x_, x);
  }
}

void TimeSeriesChart::commit() {
  bool changed = false;
  for (Line& l : lines_) {
    if (!l.dirty) continue;
    if (window_ > 0) {
      qsizetype drop = 0;
      while (drop < l.points.size() - 1 && l.points[drop + 1].x() < latest_x_ - window_) ++drop;
      l.points.remove(0, drop);
    }
    if (l.points.size() > kMaxPoints) l.points.remove(0, l.points.size() - kMaxPoints);
    l.series->replace(l.points);
    l.dirty = false;
    changed = true;
  }
  if (changed) rescale();
}

namespace {

// The smallest 1, 2, 2.5 or 5 x 10^k that is >= v (v > 0).
double nice_ceiling(double v) {
  const double decade = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * decade >= v * (1 - 1e-9)) return m * decade;
  return 10 * decade;
}

// Ticks every nice interval from 0 (about five of them) and labels with as many decimals as the
// interval needs, so labels are exact values ("0 25 50 75 100", "0 0.5 1 1.5 2").
void set_range(QValueAxis* axis, double lo, double hi, double min_interval) {
  const double interval = std::max(min_interval, nice_ceiling((hi - lo) / 5));
  if (axis->tickType() != QValueAxis::TicksDynamic) {
    axis->setTickType(QValueAxis::TicksDynamic);
    axis->setTickAnchor(0);
  }
  // Every setter re-lays out the axis and builds a label per tick: touch only what changed, and
  // in the order that never passes through a state with many ticks (a wide range with the old
  // small interval would create thousands of labels for one frame).
  auto set_interval = [&] {
    if (axis->tickInterval() == interval) return;
    axis->setTickInterval(interval);
    const int decimals = interval >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(interval) - 1e-9));
    const QString format = QString("%.%1f").arg(std::min(decimals, 3));
    if (axis->labelFormat() != format) axis->setLabelFormat(format);
  };
  auto set_bounds = [&] {
    if (axis->min() != lo || axis->max() != hi) axis->setRange(lo, hi);
  };
  if (interval >= axis->tickInterval()) {
    set_interval();
    set_bounds();
  } else {
    set_bounds();
    set_interval();
  }
}

}  // namespace

void TimeSeriesChart::rescale() {
  const double latest_x = latest_x_;
  double max_y = 0, min_x = latest_x;
  for (const Line& l : lines_) {
    if (!l.series->isVisible()) continue;
    for (const QPointF& p : l.points) {
      max_y = std::max(max_y, p.y());
      min_x = std::min(min_x, p.x());
    }
  }
  if (window_ > 0) {
    // Grows from a 30 s view up to the window, then scrolls.
    const double hi = std::max(latest_x, std::min(window_, 30.0));
    set_range(x_, std::max(0.0, hi - window_), hi, 1);
  } else {
    set_range(x_, std::min(min_x, 1.0), std::max(latest_x, 5.0), 1);
  }
  set_range(y_, 0, max_y > 0 ? nice_ceiling(max_y * 1.1) : 1, 0);
}

void TimeSeriesChart::clearAll() {
  for (Line& l : lines_) {
    l.points.clear();
    l.series->clear();
    l.dirty = false;
  }
  latest_x_ = 0;
  set_range(x_, 0, window_ > 0 ? std::min(window_, 30.0) : 5.0, 1);
  set_range(y_, 0, 1, 0);
}

}  // namespace inferdesk::gui
