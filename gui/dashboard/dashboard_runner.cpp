#include "gui/dashboard/dashboard_runner.h"

#include <QDateTime>
#include <QPointer>
#include <QtConcurrent/QtConcurrentRun>

#include <cmath>

#include "core/bench/bench_metrics.h"
#include "core/remote/machine_info.h"
#include "core/remote/probe.h"

namespace inferdesk::gui {
namespace {

const std::vector<double> kPercents{50, 90, 95, 99};

DashboardRun run_header(const RunTarget& target, const WorkloadSpec& workload, const QString& label) {
  DashboardRun run;
  run.label = label.toStdString();
  run.endpoint_name = target.name;
  run.base_url = target.base_url;
  run.model = target.model;
  run.engine = target.engine;
  run.engine_version = target.engine_version;
  run.engine_flags = target.engine_flags;
  run.workload = to_json(workload);
  run.machine = remote::to_json(remote::machine_info());
  run.started_at = QDateTime::currentMSecsSinceEpoch();
  if (run.engine.empty()) {  // not tested before the run: ask the server what it is
    try {
      const auto probe = remote::probe_endpoint({target.name, target.base_url, target.api_key});
      run.engine = remote::display_name(probe.detection.engine);
      run.engine_version = probe.detection.version;
    } catch (const std::exception&) {
      // The run itself reports an unreachable server.
    }
  }
  return run;
}

DashboardPoint point_of(const bench::PointResult& p, double offset) {
  DashboardPoint point;
  point.concurrency = p.max_concurrency;
  if (std::isfinite(p.request_rate)) point.request_rate = p.request_rate;
  point.offset_s = offset;
  point.summary = bench::to_json(p.summary);
  point.summary["max_concurrency"] = p.max_concurrency;
  point.summary["label"] = p.label;
  point.summary["prompt_seed"] = p.prompt_seed;
  if (!p.prompt_note.empty()) point.summary["prompt_note"] = p.prompt_note;
  for (const auto& r : p.run.requests) point.requests.push_back(record_of(r));
  return point;
}

}  // namespace

DashboardRunner::DashboardRunner(QObject* parent) : QObject(parent) {}

DashboardRunner::~DashboardRunner() {
  *cancel_ = true;
  future_.waitForFinished();
}

void DashboardRunner::cancel() { *cancel_ = true; }

bool DashboardRunner::start(const RunTarget& target, const WorkloadSpec& workload, const QString& label) {
  if (running_) return false;
  running_ = true;
  *cancel_ = false;
  QPointer<DashboardRunner> self(this);
  auto cancel = cancel_;
  future_ = QtConcurrent::run([self, cancel, target, workload, label] {
    auto post = [self](auto fn) { QMetaObject::invokeMethod(self.data(), fn, Qt::QueuedConnection); };
    DashboardRun run = run_header(target, workload, label);
    try {
      PreparedBenchmark prep = prepare_benchmark(workload, target.model, kPercents);
      prep.spec.load.base_url = target.base_url;
      prep.spec.load.api_key = target.api_key;
      // Wraps the HTTP driver to learn when a measured point ends (warm-up has no callback):
      // its duration places the next point's chunks on the run's time line.
      double offset = 0;
      int measured = 0;
      const bench::Driver http = bench::http_driver();
      const bench::Driver driver = [&](const bench::LoadOptions& o, const std::vector<bench::BenchRequest>& reqs) {
        bench::LoadResult r = http(o, reqs);
        if (!o.on_request_done) return r;
        offset += r.duration_s;
        const double tput = r.duration_s > 0 ? bench::summarize(r, reqs, prep.spec.summary).output_throughput : 0;
        const int i = measured++;
        const QString what = o.max_concurrency > 0 ? QObject::tr("concurrency %1").arg(o.max_concurrency)
                                                   : QObject::tr("no cap");
        const QString name = std::isfinite(o.request_rate) ? QObject::tr("rate %1/s, %2").arg(o.request_rate).arg(what) : what;
        post([self, i, name, tput] { if (self) emit self->pointFinished(i, name, tput); });
        return r;
      };
      auto on_progress = [&](const bench::BenchmarkProgress& p) {
        QVector<double> times;
        if (p.result)
          for (double t : p.result->chunk_s) times << offset + t;
        const qint64 tokens = p.result ? (p.result->output_tokens > 0 ? p.result->output_tokens : p.result->chunks) : 0;
        const int point = int(p.point), points = int(p.points), done = int(p.done), total = int(p.total);
        post([self, times, tokens, point, points, done, total] {
          if (!self) return;
          emit self->requestDone(times, tokens);
          emit self->progress(point, points, done, total);
        });
      };
      const auto points = bench::run_benchmark(driver, prep.source, prep.spec, on_progress, cancel.get());
      double at = 0;
      for (const auto& p : points) {
        run.points.push_back(point_of(p, at));
        at += p.run.duration_s;
      }
      run.status = *cancel ? "stopped" : "complete";
    } catch (const std::exception& e) {
      run.status = "failed";
      run.machine["error"] = e.what();
    }
    run.finished_at = QDateTime::currentMSecsSinceEpoch();
    post([self, run] {
      if (!self) return;
      self->running_ = false;
      emit self->finished(run);
    });
  });
  return true;
}

}  // namespace inferdesk::gui
