#include "gui/dashboard/dashboard_runner.h"

#include <QDateTime>
#include <QPointer>
#include <QtConcurrent/QtConcurrentRun>

#include "core/bench/bench_metrics.h"
#include "core/bench/workload.h"
#include "core/remote/machine_info.h"
#include "core/remote/probe.h"

namespace inferdesk::gui {
namespace {

const std::vector<double> kPercents{50, 90, 95, 99};

std::vector<bench::BenchRequest> requests_for(const RunTarget& t, const WorkloadSpec& w, int concurrency) {
  bench::RandomWorkload r;
  // Offline runs send everything at once; a swept point sends enough to keep every slot busy.
  r.num_requests = std::max(w.requests_per_point, concurrency);
  r.input_len = w.input_len;
  r.output_len = w.output_len;
  r.token_id_max = std::max(11, w.token_id_max);
  r.seed = w.seed;  // the same prompts at every point and on every engine
  r.model = t.model;
  return bench::random_completions(r);
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
    int total = 0, done = 0;
    for (int c : workload.concurrencies) total += std::max(workload.requests_per_point, c);
    double offset = 0;
    try {
      for (size_t i = 0; i < workload.concurrencies.size() && !*cancel; ++i) {
        const int c = workload.concurrencies[i];
        const auto requests = requests_for(target, workload, c);
        bench::LoadOptions o;
        o.base_url = target.base_url;
        o.endpoint = "/v1/completions";
        o.api_key = target.api_key;
        o.max_concurrency = c;
        o.seed = workload.seed;
        o.cancel = cancel.get();
        o.on_request_done = [&](size_t, const bench::RequestResult& r) {
          QVector<double> times;
          for (double t : r.chunk_s) times << offset + t;
          const qint64 tokens = r.output_tokens > 0 ? r.output_tokens : r.chunks;
          const int now = ++done;
          post([self, times, tokens, now, total] {
            if (!self) return;
            emit self->requestDone(times, tokens);
            emit self->progress(now, total);
          });
        };
        const bench::LoadResult result = bench::run_load(o, requests);
        DashboardPoint point;
        point.concurrency = c;
        point.offset_s = offset;
        point.summary = bench::to_json(bench::summarize(result, requests, kPercents));
        point.summary["max_concurrency"] = c;
        for (const auto& r : result.requests) point.requests.push_back(record_of(r));
        offset += result.duration_s;
        const double tput = summary_value(point.summary, "output_throughput");
        run.points.push_back(std::move(point));
        post([self, i, c, tput] { if (self) emit self->pointFinished(static_cast<int>(i), c, tput); });
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
