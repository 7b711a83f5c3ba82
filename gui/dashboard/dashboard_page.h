// DashboardPage: the engine comparison dashboard (sidebar page 4). Tabs: Run (endpoints, the
// workload editor with presets, Run/Stop, live progress and a live tok/s plot), Results (saved
// runs compared side by side, exports) and Published (reference data, not measured here).
// Runs go through DashboardRunner on a worker thread; a finished run is saved to the store.
// The embedded engine is measured through its own local server (gui/server), started for the
// run on a free port and stopped afterwards.
#pragma once

#include <QWidget>

#include "gui/app/app_context.h"
#include "gui/dashboard/dashboard_run.h"
#include "gui/dashboard/workload.h"

class QLabel;
class QProgressBar;
class QPushButton;
class QTabWidget;

namespace inferdesk::gui {

class DashboardRunner;
class EndpointPanel;
class ReferenceView;
class ResultsView;
class ServerController;
class TimeSeriesChart;
class WorkloadEditor;

class DashboardPage : public QWidget {
  Q_OBJECT

 public:
  explicit DashboardPage(AppContext& ctx, QWidget* parent = nullptr);
  ~DashboardPage() override;

  EndpointPanel* endpoints() const { return endpoints_; }
  ResultsView* results() const { return results_; }
  ReferenceView* reference() const { return reference_; }
  DashboardRunner* runner() const { return runner_; }
  TimeSeriesChart* livePlot() const { return live_; }
  QTabWidget* tabs() const { return tabs_; }
  QProgressBar* progressBar() const { return progress_; }
  WorkloadEditor* workloadEditor() const { return editor_; }

  WorkloadSpec workload() const;
  void setWorkload(const WorkloadSpec& w);
  void applyPreset(int index);
  // Starts a run of the current workload on the selected endpoint; false (with errorMessage)
  // when refused. The saved run's id arrives with runSaved.
  bool startRun();
  void stopRun();

 signals:
  void errorMessage(const QString& text);
  void runSaved(std::int64_t runId);

 private:
  QWidget* buildRunTab();
  void onFinished(const DashboardRun& run);
  void updateDefaultTokenizer();
  void drawLive(const std::vector<std::pair<double, double>>& buckets, double width);

  AppContext& ctx_;
  QTabWidget* tabs_ = nullptr;
  EndpointPanel* endpoints_ = nullptr;
  ResultsView* results_ = nullptr;
  ReferenceView* reference_ = nullptr;
  DashboardRunner* runner_ = nullptr;
  ServerController* server_ = nullptr;  // the embedded engine's server while a run uses it
  TimeSeriesChart* live_ = nullptr;
  WorkloadEditor* editor_ = nullptr;
  QPushButton *run_ = nullptr, *stop_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* status_ = nullptr;
  std::map<int, double> live_buckets_;  // output tokens per second of the run so far
};

}  // namespace inferdesk::gui
