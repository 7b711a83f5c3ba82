// ResultsView: the saved runs (store::BenchStore; long names elided, full text in the tooltip),
// checked ones compared side by side in five plots (result_charts.h, each with its metric's
// definition as tooltip), the selected run's detail table (vLLM's figures beside GenAI-Perf's,
// llmperf's and guidellm's), core's metric definitions, exports (a run as JSON with vLLM's keys
// or CSV, every plot as PNG and SVG) and imports of other tools' result files.
#pragma once

#include <QWidget>

#include <vector>

#include "gui/app/app_context.h"
#include "gui/dashboard/dashboard_run.h"
#include "gui/dashboard/result_charts.h"

class QGridLayout;
class QLabel;
class QListWidget;
class QTableWidget;
class QTabWidget;

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
  // Reads a result file (vLLM, GenAI-Perf, guidellm, ours) into the store as a run; its id, or 0
  // with *error set (the button shows it in a message box).
  std::int64_t importFile(const QString& path, QString* error);
  QTableWidget* definitions() const { return definitions_; }
  QTableWidget* details() const { return details_; }
  QTabWidget* tabs() const { return tabs_; }
  // Writes the first checked run as JSON or CSV; false with *error on failure.
  bool exportRun(std::int64_t id, const QString& path, bool csv, QString* error);

 signals:
  void errorMessage(const QString& text);

 protected:
  void changeEvent(QEvent* event) override;  // a theme switch repaints the charts' colours

 private:
  void replot();
  QWidget* buildButtons(QWidget* parent);
  void showDetails(std::int64_t id);
  AppContext& ctx_;
  QListWidget* list_ = nullptr;
  QGridLayout* grid_ = nullptr;
  QLabel* summary_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  QTableWidget *definitions_ = nullptr, *details_ = nullptr;
  QLabel* details_title_ = nullptr;
  std::vector<DashboardRun> shown_;
  QList<QChartView*> plots_;
};

}  // namespace inferdesk::gui
