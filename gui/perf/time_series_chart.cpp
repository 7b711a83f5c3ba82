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
  x_->setLabelFormat("%.0f");
  x_->setRange(0, windowX > 0 ? windowX : 10);
  y_ = new QValueAxis();
  y_->setTitleText(yLabel);
  y_->setLabelFormat("%.0f");
  y_->setRange(0, 1);
  chart_->addAxis(x_, Qt::AlignBottom);
  chart_->addAxis(y_, Qt::AlignLeft);
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
  series_.append(s);
  if (series_.size() == 1) chart_->legend()->setVisible(false);
  else chart_->legend()->setVisible(true);
  return s;
}

void TimeSeriesChart::append(QLineSeries* series, double x, double y) {
  if (!std::isfinite(x) || !std::isfinite(y)) return;
  series->append(x, y);
  if (window_ > 0) {
    int drop = 0;
    const auto points = series->points();
    while (drop < points.size() - 1 && points[drop + 1].x() < x - window_) ++drop;
    if (drop > 0) series->removePoints(0, drop);
  }
  if (series->count() > kMaxPoints) series->removePoints(0, series->count() - kMaxPoints);
  rescale(x);
}

void TimeSeriesChart::rescale(double latest_x) {
  double max_y = 0, min_x = latest_x;
  for (QLineSeries* s : series_) {
    const auto points = s->points();
    for (const QPointF& p : points) {
      max_y = std::max(max_y, p.y());
      min_x = std::min(min_x, p.x());
    }
  }
  if (window_ > 0) {
    x_->setRange(std::max(0.0, latest_x - window_), std::max(window_, latest_x));
  } else {
    x_->setRange(std::min(min_x, 1.0), std::max(latest_x, min_x + 1.0));
  }
  // A round ceiling (1, 2, 2.5, 5 x 10^k) so the axis does not jitter with every point.
  double top = 1;
  const double want = max_y * 1.1;
  if (want > 1) {
    const double decade = std::pow(10.0, std::floor(std::log10(want)));
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
      top = m * decade;
      if (top >= want) break;
    }
  }
  if (std::abs(y_->max() - top) > 1e-9) y_->setRange(0, top);
}

void TimeSeriesChart::clearAll() {
  for (QLineSeries* s : series_) s->clear();
  x_->setRange(0, window_ > 0 ? window_ : 10);
  y_->setRange(0, 1);
}

}  // namespace inferdesk::gui
