// A small line chart for the performance page: one QChart with value axes and a few named
// series. append() adds a point, drops points older than the window (when one is set) and
// rescales the axes, so the chart scrolls as time passes.
#pragma once

#include <QChartView>
#include <QColor>
#include <QLineSeries>
#include <QString>
#include <QValueAxis>

namespace inferdesk::gui {

class TimeSeriesChart : public QChartView {
 public:
  // windowX > 0: show only the last windowX units of x (seconds); 0: keep up to maxPoints points.
  TimeSeriesChart(const QString& title, const QString& xLabel, const QString& yLabel,
                  double windowX, QWidget* parent = nullptr);

  QLineSeries* addSeries(const QString& name, const QColor& color);
  void append(QLineSeries* series, double x, double y);
  void clearAll();
  QValueAxis* xAxis() const { return x_; }
  QValueAxis* yAxis() const { return y_; }

  static constexpr int kMaxPoints = 1200;

 private:
  void rescale(double latest_x);

  QChart* chart_ = nullptr;
  QValueAxis* x_ = nullptr;
  QValueAxis* y_ = nullptr;
  QList<QLineSeries*> series_;
  double window_ = 0;
};

}  // namespace inferdesk::gui
