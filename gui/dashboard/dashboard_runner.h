// DashboardRunner: runs a workload against one target on a worker thread and reports back on
// the GUI thread. The one place that knows how a run is made: prepare_benchmark (workload.h)
// builds a request source, core/bench's run_benchmark draws each point's own prompts from it
// (its progress callback drives the live progress and plot, its cancel flag is Stop), and each
// point's summary and raw per-request records become a DashboardPoint.
#pragma once

#include <QFuture>
#include <QObject>
#include <QVector>

#include <atomic>
#include <memory>
#include <string>

#include "gui/dashboard/dashboard_run.h"
#include "gui/dashboard/workload.h"

namespace inferdesk::gui {

struct RunTarget {
  std::string name, base_url, api_key, model;
  std::string engine, engine_version, engine_flags;
};

class DashboardRunner : public QObject {
  Q_OBJECT

 public:
  explicit DashboardRunner(QObject* parent = nullptr);
  ~DashboardRunner() override;  // cancels and waits for the worker

  bool isRunning() const { return running_; }
  // False (and nothing started) while a run is going.
  bool start(const RunTarget& target, const WorkloadSpec& workload, const QString& label);
  void cancel();

 signals:
  // Point `point` of `points` (0-based): `done` of its `total` requests have ended.
  void progress(int point, int points, int done, int total);
  // A request ended: its content chunk arrivals (seconds since the run began) and token count.
  void requestDone(const QVector<double>& chunkTimes, qint64 outputTokens);
  void pointFinished(int index, const QString& label, double outputThroughput);
  // The whole run (status "complete", "stopped" or "failed"; not saved yet).
  void finished(const inferdesk::gui::DashboardRun& run);

 private:
  std::shared_ptr<std::atomic<bool>> cancel_ = std::make_shared<std::atomic<bool>>(false);
  QFuture<void> future_;
  bool running_ = false;
};

}  // namespace inferdesk::gui

Q_DECLARE_METATYPE(inferdesk::gui::DashboardRun)
