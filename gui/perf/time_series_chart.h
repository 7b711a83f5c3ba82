// A small line chart for the performance page: one QChart with value axes and a few named
// series. append() buffers points; commit() drops points older than the window (when one is set),
// hands each changed series its points in one replace() and rescales the axes once, so the chart
// scrolls as time passes and redraws once per update instead of once per point. Its colours
// (background, plot area, titles, labels, grid) come from the widget's palette and follow it
// when it changes (dark mode). Counts (requests, blocks) use whole-number ticks.
#pragma once

#include <QChartView>
#include <QColor>
#include <QLineSeries>
#include <QString>
#include <QValueAxis>

#include <vector>

namespace inferdesk::gui {

class TimeSeriesChart : public QChartView {
 public:
  // windowX > 0: show only the last windowX units of x (seconds); 0: keep up to maxPoints points.
  TimeSeriesChart(const QString& title, const QString& xLabel, const QString& yLabel, double windowX,
                  QWidget* parent = nullptr);

  QLineSeries* addSeries(const QString& name, const QColor& color);
  void append(QLineSeries* series, double x, double y);
  void commit();
  void clearAll();
  // y values are counts: ticks at whole numbers (at least 1 apart), labels without decimals.
  void setIntegerValues(bool integer);
  QValueAxis* xAxis() const { return x_; }
  QValueAxis* yAxis() const { return y_; }
  QChart* chart() const { return chart_; }

  static constexpr int kMaxPoints = 1200;

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void applyPalette();
  struct Line {
    QLineSeries* series = nullptr;
    QList<QPointF> points;
    bool dirty = false;
  };
  void rescale();

  QChart* chart_ = nullptr;
  QValueAxis* x_ = nullptr;
  QValueAxis* y_ = nullptr;
  std::vector<Line> lines_;
  double window_ = 0;
  double latest_x_ = 0;
  bool integer_ = false;
};

}  // namespace inferdesk::gui
