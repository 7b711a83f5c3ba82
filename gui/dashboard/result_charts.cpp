#include "gui/dashboard/result_charts.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPainter>
#include <QSvgGenerator>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <map>

#include "gui/dashboard/metric_text.h"
#include "gui/perf/nice_axis.h"

namespace inferdesk::gui {
namespace {

// "#12 label (engine)": the id first, so runs of one endpoint stay apart in an elided legend.
QString run_name(const DashboardRun& r) {
  QString name = QString::fromStdString(r.label.empty() ? r.endpoint_name : r.label);
  if (r.id > 0) name = QString("#%1 ").arg(r.id) + name;
  if (!r.engine.empty() && name.indexOf(QString::fromStdString(r.engine)) < 0)
    name += " (" + QString::fromStdString(r.engine) + ")";
  return name;
}

QValueAxis* value_axis(const QString& title) {
  auto* a = new QValueAxis();
  a->setTitleText(title);
  a->setLabelFormat("%.4g");
  return a;
}

void attach(QChart* chart, QAbstractSeries* s, QAbstractAxis* x, QAbstractAxis* y) {
  chart->addSeries(s);
  s->attachAxis(x);
  s->attachAxis(y);
}

// Concurrency sweeps plot against the cap (log 2); rate sweeps and guidellm's (one cap for every
// point) against the request rate each point achieved.
bool by_concurrency(const std::vector<DashboardRun>& runs) {
  for (const auto& r : runs) {
    std::vector<int> caps;
    for (const auto& p : r.points) caps.push_back(p.concurrency);
    std::sort(caps.begin(), caps.end());
    if (std::adjacent_find(caps.begin(), caps.end()) != caps.end()) return false;
  }
  return true;
}

void fill_throughput(QChart* chart, const std::vector<DashboardRun>& runs) {
  const bool caps = by_concurrency(runs);
  QAbstractAxis* x = nullptr;
  QLogValueAxis* log_x = nullptr;
  QValueAxis* rate_x = nullptr;
  if (caps) {
    log_x = new QLogValueAxis();
    log_x->setBase(2);
    log_x->setLabelFormat("%d");
    log_x->setTitleText(QObject::tr("max concurrency"));
    x = log_x;
  } else {
    rate_x = value_axis(QObject::tr("request throughput (req/s)"));
    x = rate_x;
  }
  auto* y = value_axis(QObject::tr("output tok/s"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  double ymax = 1, xmax = caps ? 2 : 0.1;
  for (size_t i = 0; i < runs.size(); ++i) {
    auto* s = new QLineSeries();
    s->setName(run_name(runs[i]));
    s->setColor(series_color(static_cast<int>(i)));
    s->setPointsVisible(true);
    s->setMarkerSize(7);  // a run of one point is a dot: keep it visible
    for (const auto& p : runs[i].points) {
      // An uncapped point is plotted at the number of requests it sent at once.
      const double c = !caps                ? summary_value(p.summary, "request_throughput")
                       : p.concurrency > 0 ? p.concurrency
                                           : std::max<double>(1, p.requests.size());
      const double v = summary_value(p.summary, "output_throughput");
      s->append(c, v);
      ymax = std::max(ymax, v);
      xmax = std::max(xmax, c);
    }
    attach(chart, s, x, y);
  }
  if (caps) log_x->setRange(1, std::pow(2.0, std::ceil(std::log2(xmax)) + 0.25));  // whole powers of two
  else set_nice_range(rate_x, 0, xmax * 1.05, 0, true);
  set_nice_range(y, 0, ymax * 1.05, 0, true);
}

void fill_percentiles(QChart* chart, const std::vector<DashboardRun>& runs, const std::string& metric) {
  const QStringList stats{"mean", "p50", "p90", "p99"};
  auto* series = new QBarSeries();
  double ymax = 1;
  for (size_t i = 0; i < runs.size(); ++i) {
    auto* set = new QBarSet(run_name(runs[i]));
    set->setColor(series_color(static_cast<int>(i)));
    set->setBorderColor(series_color(static_cast<int>(i)));
    const auto& s = runs[i].points.empty() ? nlohmann::ordered_json::object() : runs[i].points.back().summary;
    for (const QString& stat : stats) {
      // vLLM files name the 50th percentile "median" unless --metric-percentiles asked for p50.
      const std::string key = stat.toStdString() + "_" + metric + "_ms";
      const double v = s.contains(key) || stat != "p50" ? summary_value(s, key) : summary_value(s, "median_" + metric + "_ms");
      *set << v;
      ymax = std::max(ymax, v);
    }
    series->append(set);
  }
  auto* x = new QBarCategoryAxis();
  x->append(stats);
  auto* y = value_axis(QObject::tr("milliseconds"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  attach(chart, series, x, y);
  set_nice_range(y, 0, ymax * 1.05, 0, true);
}

void fill_cdf(QChart* chart, const std::vector<DashboardRun>& runs) {
  auto* x = value_axis(QObject::tr("E2E latency (ms)"));
  auto* y = value_axis(QObject::tr("fraction"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  double xmax = 1;
  for (size_t i = 0; i < runs.size(); ++i) {
    std::vector<double> lat;
    if (!runs[i].points.empty())
      for (const auto& r : runs[i].points.back().requests)
        if (r.success) lat.push_back(r.latency_s * 1000);
    std::sort(lat.begin(), lat.end());
    auto* s = new QLineSeries();
    s->setName(run_name(runs[i]));
    s->setColor(series_color(static_cast<int>(i)));
    for (size_t k = 0; k < lat.size(); ++k) {
      s->append(lat[k], static_cast<double>(k) / lat.size());
      s->append(lat[k], static_cast<double>(k + 1) / lat.size());  // a step per request
    }
    if (!lat.empty()) xmax = std::max(xmax, lat.back());
    attach(chart, s, x, y);
  }
  set_nice_range(x, 0, xmax * 1.02, 0, true);
  set_nice_range(y, 0, 1, 0.25, false);
}

void fill_over_time(QChart* chart, const std::vector<DashboardRun>& runs) {
  auto* x = value_axis(QObject::tr("seconds since the run began"));
  auto* y = value_axis(QObject::tr("output tok/s"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  double xmax = 0.01, ymax = 1;
  for (size_t i = 0; i < runs.size(); ++i) {
    auto* s = new QLineSeries();
    s->setName(run_name(runs[i]));
    s->setColor(series_color(static_cast<int>(i)));
    const auto buckets = tokens_per_second(runs[i]);
    const double width = buckets.size() > 1 ? buckets[1].first - buckets[0].first : 1.0;
    for (const auto& [t, v] : buckets) {
      s->append(t + width / 2, v);
      xmax = std::max(xmax, t + width);
      ymax = std::max(ymax, v);
    }
    attach(chart, s, x, y);
  }
  set_nice_range(x, 0, xmax, 0, true);
  set_nice_range(y, 0, ymax * 1.05, 0, true);
}

}  // namespace

QColor series_color(int n) {
  // Mid-lightness hues: readable on white and on a dark grey background.
  static const QColor colors[] = {QColor(0x1f, 0x9e, 0xe8), QColor(0xf0, 0x8a, 0x24), QColor(0x3c, 0xb3, 0x71),
                                  QColor(0xd6, 0x4f, 0x7a), QColor(0x9b, 0x7b, 0xe0), QColor(0xc9, 0xb0, 0x2e)};
  return colors[n % 6];
}

QString plot_title(PlotKind kind) {
  switch (kind) {
    case PlotKind::Throughput: return QObject::tr("Output throughput vs concurrency");
    case PlotKind::TtftPercentiles: return QObject::tr("TTFT at the highest concurrency");
    case PlotKind::TpotPercentiles: return QObject::tr("TPOT at the highest concurrency");
    case PlotKind::LatencyCdf: return QObject::tr("E2E latency CDF (highest concurrency)");
    case PlotKind::TokensOverTime: return QObject::tr("Output tok/s over time");
  }
  return {};
}

QString plot_file_stem(PlotKind kind) {
  switch (kind) {
    case PlotKind::Throughput: return "throughput_vs_concurrency";
    case PlotKind::TtftPercentiles: return "ttft_percentiles";
    case PlotKind::TpotPercentiles: return "tpot_percentiles";
    case PlotKind::LatencyCdf: return "latency_cdf";
    case PlotKind::TokensOverTime: return "tokens_over_time";
  }
  return "plot";
}

namespace {

QString plot_definition(PlotKind kind) {
  switch (kind) {
    case PlotKind::Throughput: return definition_tooltip("vllm.output_throughput");
    case PlotKind::TtftPercentiles: return definition_tooltip("vllm.ttft");
    case PlotKind::TpotPercentiles: return definition_tooltip("vllm.tpot");
    case PlotKind::LatencyCdf: return definition_tooltip("vllm.e2el");
    case PlotKind::TokensOverTime: return over_time_definition();
  }
  return {};
}

}  // namespace

QChartView* make_plot(PlotKind kind, const std::vector<DashboardRun>& runs, QWidget* parent) {
  auto* chart = new QChart();
  chart->setTitle(plot_title(kind));
  chart->legend()->setAlignment(Qt::AlignBottom);
  QFont small = chart->legend()->font();  // a smaller legend shows more of each run's name
  small.setPointSizeF(small.pointSizeF() * 0.85);
  chart->legend()->setFont(small);
  chart->setMargins(QMargins(4, 4, 4, 4));
  switch (kind) {
    case PlotKind::Throughput: fill_throughput(chart, runs); break;
    case PlotKind::TtftPercentiles: fill_percentiles(chart, runs, "ttft"); break;
    case PlotKind::TpotPercentiles: fill_percentiles(chart, runs, "tpot"); break;
    case PlotKind::LatencyCdf: fill_cdf(chart, runs); break;
    case PlotKind::TokensOverTime: fill_over_time(chart, runs); break;
  }
  auto* view = new QChartView(chart, parent);
  view->setRenderHint(QPainter::Antialiasing);
  view->setMinimumSize(320, 240);
  view->setToolTip(plot_definition(kind));
  view->setObjectName(plot_file_stem(kind));
  style_chart(chart, view->palette());
  return view;
}

void style_chart(QChart* chart, const QPalette& pal) {
  const QColor bg = pal.color(QPalette::Base), text = pal.color(QPalette::Text);
  QColor grid = pal.color(QPalette::Mid);
  chart->setBackgroundBrush(bg);
  chart->setPlotAreaBackgroundVisible(false);
  chart->setTitleBrush(text);
  chart->legend()->setLabelColor(text);
  for (QAbstractAxis* a : chart->axes()) {
    a->setLabelsColor(text);
    a->setTitleBrush(text);
    a->setGridLineColor(grid);
    a->setLinePenColor(grid);
  }
}

double bucket_width(double duration_s) {
  // 1-second buckets as vLLM's peak figure uses; a short run gets ~20 finer ones, so it still
  // draws a curve.
  return duration_s >= 20 ? 1.0 : std::max(0.01, duration_s / 20);
}

std::vector<std::pair<double, double>> tokens_per_second(const DashboardRun& run) {
  double end = 0;
  for (const auto& p : run.points)
    for (const auto& r : p.requests)
      if (!r.chunk_s.empty()) end = std::max(end, p.offset_s + r.chunk_s.back());
  const double width = bucket_width(end);
  std::map<int, double> buckets;
  for (const auto& p : run.points)
    for (const auto& r : p.requests) {
      if (r.chunk_s.empty()) continue;
      // Each chunk carries its share of the request's tokens (servers may send several per chunk).
      const double per_chunk = r.output_tokens > 0 ? double(r.output_tokens) / r.chunk_s.size() : 1.0;
      for (double t : r.chunk_s) buckets[static_cast<int>((p.offset_s + t) / width)] += per_chunk;
    }
  std::vector<std::pair<double, double>> out;
  if (buckets.empty()) return out;
  for (int b = 0; b <= buckets.rbegin()->first; ++b) {
    const auto it = buckets.find(b);
    out.emplace_back(b * width, (it == buckets.end() ? 0.0 : it->second) / width);
  }
  return out;
}

bool save_plot_png(QChartView* view, const QString& path, QString* error) {
  const QPixmap pixmap = view->grab();
  if (pixmap.isNull() || !pixmap.save(path, "PNG")) {
    if (error) *error = QObject::tr("could not write %1").arg(path);
    return false;
  }
  return true;
}

bool save_plot_svg(QChartView* view, const QString& path, QString* error) {
  QSvgGenerator svg;
  svg.setFileName(path);
  svg.setSize(view->size());
  svg.setViewBox(QRect(QPoint(0, 0), view->size()));
  svg.setTitle(view->chart()->title());
  QPainter painter;
  if (!painter.begin(&svg)) {
    if (error) *error = QObject::tr("could not write %1").arg(path);
    return false;
  }
  view->render(&painter);
  painter.end();
  return true;
}

}  // namespace inferdesk::gui
