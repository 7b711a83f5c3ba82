// ResultsView: the saved runs (store::BenchStore), checked ones compared side by side in five
// plots (result_charts.h) with each metric's definition, and exports: a run as JSON (vLLM's
// keys) or CSV, every plot as PNG and SVG.
#pragma once

#include <QWidget>

#include <vector>

#include "gui/app/app_context.h"
#include "gui/dashboard/dashboard_run.h"
#include "gui/dashboard/result_charts.h"

class QGridLayout;
class QLabel;
class QListWidget;

namespace inferdesk::gui {

class ResultsView : public QWidget {
  Q_OBJECT

 public:
  explicit ResultsView(AppContext& ctx, QWidget* parent = nullptr);

  void reload();  // re-reads the saved runs (keeps checks by id)
  // Checks these runs (by id) and plots them.
  void compare(const std::vector<std::int64_t>& ids);
  std::vector<std::int64_t> checkedIds() const;
  const std::vector<DashboardRun>& shown() const { return shown_; }
  QList<QChartView*> plots() const { return plots_; }
  QListWidget* list() const { return list_; }
  // Writes <stem>.png and <stem>.svg of every plot into dir; returns the paths written.
  QStringList savePlots(const QString& dir, QString* error);
  // Writes the first checked run as JSON or CSV; false with *error on failure.
  bool exportRun(std::int64_t id, const QString& path, bool csv, QString* error);

 signals:
  void errorMessage(const QString& text);

 private:
  void replot();
  AppContext& ctx_;
  QListWidget* list_ = nullptr;
  QGridLayout* grid_ = nullptr;
  QLabel* summary_ = nullptr;
  std::vector<DashboardRun> shown_;
  QList<QChartView*> plots_;
};

}  // namespace inferdesk::gui
