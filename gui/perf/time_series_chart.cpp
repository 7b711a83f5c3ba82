#include "gui/perf/time_series_chart.h"

#include "gui/perf/nice_axis.h"

#include <QEvent>
#include <QPen>

#include <algorithm>
#include <cmath>

namespace inferdesk::gui {

TimeSeriesChart::TimeSeriesChart(const QString& title, const QString& xLabel, const QString& yLabel, double windowX,
                                 QWidget* parent)
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
  setMinimumSize(280, 180);
  applyPalette();
}

void TimeSeriesChart::applyPalette() {
  const QPalette pal = palette();
  const QColor base = pal.color(QPalette::Base), text = pal.color(QPalette::Text);
  const QColor grid = QColor::fromRgbF(base.redF() * 0.8f + text.redF() * 0.2f,
                                       base.greenF() * 0.8f + text.greenF() * 0.2f,
                                       base.blueF() * 0.8f + text.blueF() * 0.2f);
  chart_->setBackgroundBrush(pal.brush(QPalette::Base));
  chart_->setBackgroundPen(QPen(grid));
  chart_->setPlotAreaBackgroundVisible(false);
  chart_->setTitleBrush(QBrush(text));
  chart_->legend()->setLabelColor(text);
  for (QValueAxis* a : {x_, y_}) {
    a->setLabelsColor(text);
    a->setTitleBrush(QBrush(text));
    a->setLinePenColor(grid);
    a->setGridLineColor(grid);
  }
  setBackgroundBrush(pal.brush(QPalette::Window));
}

void TimeSeriesChart::changeEvent(QEvent* event) {
  QChartView::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) applyPalette();
}

void TimeSeriesChart::setIntegerValues(bool integer) {
  integer_ = integer;
  rescale();
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
    set_nice_range(x_, std::max(0.0, hi - window_), hi, 1, false);
  } else {
    set_nice_range(x_, std::min(min_x, 1.0), std::max(latest_x, 5.0), 1, true, true);  // request numbers
  }
  if (integer_)  // whole-number ticks and a top that is a whole number above the largest count
    set_nice_range(y_, 0, std::max(1.0, std::ceil(max_y)), 1, true, true);
  else
    set_nice_range(y_, 0, max_y > 0 ? max_y * 1.05 : 1, 0, true);
}

void TimeSeriesChart::clearAll() {
  for (Line& l : lines_) {
    l.points.clear();
    l.series->clear();
    l.dirty = false;
  }
  latest_x_ = 0;
  set_nice_range(x_, 0, window_ > 0 ? std::min(window_, 30.0) : 5.0, 1, true);
  set_nice_range(y_, 0, 1, integer_ ? 1 : 0, true);
}

}  // namespace inferdesk::gui
