// The dashboard's plots over one or more runs (Qt Charts): output throughput vs concurrency per
// run, TTFT and TPOT percentiles side by side (one bar set per run, at each run's last point),
// the E2E latency CDF (last point), and output tok/s over time (1-second buckets of chunk
// arrivals). Colours follow the palette (dark theme included). Each plot saves as PNG or SVG.
#pragma once

#include <QChartView>
#include <QPalette>
#include <QString>

#include <vector>

#include "gui/dashboard/dashboard_run.h"

namespace inferdesk::gui {

enum class PlotKind { Throughput, TtftPercentiles, TpotPercentiles, LatencyCdf, TokensOverTime };

QString plot_title(PlotKind kind);
QString plot_file_stem(PlotKind kind);  // "throughput_vs_concurrency", ...

// A new chart view of `kind` over `runs` (the view owns its chart).
QChartView* make_plot(PlotKind kind, const std::vector<DashboardRun>& runs, QWidget* parent = nullptr);
// Paints chart colours from a palette (background, plot area, titles, labels, grid, legend).
void style_chart(QChart* chart, const QPalette& palette);
// The n-th series colour: distinct on light and dark backgrounds.
QColor series_color(int n);

// Output tokens/s per bucket (x = bucket start, seconds since the run began): 1-second buckets,
// finer ones (1/20 of the run) for runs shorter than 20 s.
double bucket_width(double duration_s);
std::vector<std::pair<double, double>> tokens_per_second(const DashboardRun& run);

// False with *error set when the file cannot be written.
bool save_plot_png(QChartView* view, const QString& path, QString* error);
bool save_plot_svg(QChartView* view, const QString& path, QString* error);

}  // namespace inferdesk::gui
