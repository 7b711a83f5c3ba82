#include "gui/dashboard/dashboard_page.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QTabWidget>
#include <QVBoxLayout>

#include "core/store/store.h"
#include "gui/dashboard/dashboard_runner.h"
#include "gui/dashboard/endpoint_panel.h"
#include "gui/dashboard/metric_text.h"
#include "gui/dashboard/reference_view.h"
#include "gui/dashboard/result_charts.h"
#include "gui/dashboard/results_view.h"
#include "gui/dashboard/workload_editor.h"
#include "gui/engine/engine_controller.h"
#include "gui/perf/nice_axis.h"
#include "gui/perf/time_series_chart.h"
#include "gui/server/server_controller.h"

namespace inferdesk::gui {

namespace {
// A tab's content in a scroll area: the forms and plots keep their sizes on a small screen, and
// the page never sets the window's minimum width (gui/README.md's layout rules).
QScrollArea* scrolled(QWidget* content) {
  auto* area = new QScrollArea();
  area->setWidgetResizable(true);
  area->setFrameShape(QFrame::NoFrame);
  area->setWidget(content);
  return area;
}
}  // namespace

DashboardPage::DashboardPage(AppContext& ctx, QWidget* parent) : QWidget(parent), ctx_(ctx) {
  runner_ = new DashboardRunner(this);
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(8, 8, 8, 8);
  tabs_ = new QTabWidget(this);
  tabs_->setObjectName("dashboardTabs");
  v->addWidget(tabs_);
  tabs_->addTab(scrolled(buildRunTab()), tr("Run"));
  results_ = new ResultsView(ctx_, this);
  tabs_->addTab(scrolled(results_), tr("Results"));
  reference_ = new ReferenceView(load_reference(), this);
  tabs_->addTab(scrolled(reference_), tr("Published (not measured here)"));
  connect(endpoints_, &EndpointPanel::errorMessage, this, &DashboardPage::errorMessage);
  connect(results_, &ResultsView::errorMessage, this, &DashboardPage::errorMessage);
  connect(runner_, &DashboardRunner::progress, this, [this](int point, int points, int done, int total) {
    // One bar over the whole sweep: every point sends as many requests (prompts of its own).
    progress_->setMaximum(std::max(1, points * total));
    progress_->setValue(point * total + done);
    progress_->setFormat(tr("point %1 of %2 \u00b7 %3 / %4 requests").arg(point + 1).arg(points).arg(done).arg(total));
  });
  connect(runner_, &DashboardRunner::requestDone, this, [this](const QVector<double>& times, qint64 tokens) {
    // Quarter-second buckets while the run goes; the finished run is redrawn with its own width.
    constexpr double kWidth = 0.25;
    const double per_chunk = times.isEmpty() ? 0 : double(tokens) / times.size();
    for (double t : times) live_buckets_[static_cast<int>(t / kWidth)] += per_chunk;
    std::vector<std::pair<double, double>> points;
    for (const auto& [b, n] : live_buckets_) points.emplace_back(b * kWidth, n / kWidth);
    if (points.size() > 1) points.pop_back();  // the newest bucket is still filling: not a real drop
    drawLive(points, kWidth);
  });
  connect(runner_, &DashboardRunner::pointFinished, this, [this](int i, const QString& what, double tput) {
    status_->setText(tr("Point %1 (%2): %3 output tok/s").arg(i + 1).arg(what).arg(tput, 0, 'f', 1));
  });
  connect(runner_, &DashboardRunner::finished, this, &DashboardPage::onFinished);
  // The embedded engine's model folder is the tokenizer unless the user names another.
  connect(endpoints_->list(), &QListWidget::currentRowChanged, this, [this] { updateDefaultTokenizer(); });
  updateDefaultTokenizer();
}

void DashboardPage::updateDefaultTokenizer() {
  const auto m = ctx_.engine && endpoints_->builtinSelected() ? ctx_.engine->loadedModel() : std::nullopt;
  editor_->setDefaultTokenizer(m ? m->path : QString());
}

DashboardPage::~DashboardPage() = default;

QWidget* DashboardPage::buildRunTab() {
  auto* tab = new QWidget(this);
  auto* row = new QHBoxLayout(tab);
  auto* splitter = new QSplitter(tab);
  row->addWidget(splitter);
  endpoints_ = new EndpointPanel(ctx_, splitter);
  auto* right = new QWidget(splitter);
  auto* v = new QVBoxLayout(right);
  editor_ = new WorkloadEditor(right);
  v->addWidget(editor_);
  auto* buttons = new QHBoxLayout();
  run_ = new QPushButton(tr("Run"), right);
  run_->setObjectName("runBenchmark");
  stop_ = new QPushButton(tr("Stop"), right);
  stop_->setEnabled(false);
  progress_ = new QProgressBar(right);
  progress_->setObjectName("runProgress");
  progress_->setValue(0);
  buttons->addWidget(run_);
  buttons->addWidget(stop_);
  buttons->addWidget(progress_, 1);
  v->addLayout(buttons);
  status_ = new QLabel(tr("Choose an endpoint and a workload, then Run."), right);
  status_->setObjectName("runStatus");
  status_->setWordWrap(true);
  v->addWidget(status_);
  live_ = new TimeSeriesChart(tr("Output tok/s (live)"), tr("seconds"), tr("tok/s"), 0, right);
  live_->addSeries(tr("output tok/s"), QColor(0x1f, 0x9e, 0xe8));
  live_->setToolTip(over_time_definition());
  live_->setMinimumHeight(220);
  v->addWidget(live_, 1);
  splitter->setStretchFactor(1, 2);
  splitter->setSizes({360, 800});
  connect(run_, &QPushButton::clicked, this, [this] { startRun(); });
  connect(stop_, &QPushButton::clicked, this, &DashboardPage::stopRun);
  return tab;
}

WorkloadSpec DashboardPage::workload() const { return editor_->spec(); }
void DashboardPage::setWorkload(const WorkloadSpec& w) { editor_->setSpec(w); }
void DashboardPage::applyPreset(int index) { editor_->applyPreset(index); }

bool DashboardPage::startRun() {
  if (runner_->isRunning()) return false;
  updateDefaultTokenizer();
  const WorkloadSpec w = workload();
  if (const QString why = validate(w); !why.isEmpty()) {
    emit errorMessage(why);
    return false;
  }
  RunTarget target = endpoints_->currentTarget();
  if (endpoints_->builtinSelected()) {
    if (!server_) server_ = new ServerController(ctx_.engine, this);
    if (!server_->isRunning() && !server_->start(0)) {
      emit errorMessage(tr("could not start the embedded engine's server"));
      return false;
    }
    target.base_url = server_->url().toStdString();
    target.engine = "InferDesk";
    target.name = EndpointPanel::builtinName().toStdString();
  }
  if (target.base_url.empty()) {
    emit errorMessage(tr("Choose or fill in an endpoint first."));
    return false;
  }
  const QString label = editor_->label().isEmpty() ? QString::fromStdString(target.name) : editor_->label();
  live_buckets_.clear();
  live_->clearAll();
  progress_->setValue(0);
  run_->setEnabled(false);
  stop_->setEnabled(true);
  status_->setText(tr("Running %1 on %2\u2026").arg(w.preset, QString::fromStdString(target.base_url)));
  return runner_->start(target, w, label);
}

void DashboardPage::stopRun() {
  runner_->cancel();
  status_->setText(tr("Stopping\u2026"));
}

void DashboardPage::drawLive(const std::vector<std::pair<double, double>>& buckets, double width) {
  live_->clearAll();
  auto* s = qobject_cast<QLineSeries*>(live_->chart()->series().value(0));
  double end = 0;
  for (const auto& [t, v] : buckets) {
    live_->append(s, t + width / 2, v);
    end = std::max(end, t + width);
  }
  live_->commit();
  // From 0 to the run's end in round steps, however short the run (a fast server ends in a second).
  set_nice_range(live_->xAxis(), 0, std::max(end, 0.01), 0, true);
}

void DashboardPage::onFinished(const DashboardRun& run) {
  if (!run.points.empty()) {
    const auto buckets = tokens_per_second(run);
    drawLive(buckets, buckets.size() > 1 ? buckets[1].first - buckets[0].first : 1.0);
  }
  run_->setEnabled(true);
  stop_->setEnabled(false);
  if (server_ && server_->isRunning()) server_->stop(tr("the benchmark ended"));
  if (run.status == "failed") {
    const std::string why = run.machine.value("error", std::string("unknown error"));
    status_->setText(tr("The run failed: %1").arg(QString::fromStdString(why)));
    emit errorMessage(status_->text());
  }
  if (run.points.empty()) return;
  try {
    const std::int64_t id = store::BenchStore(ctx_.db).save_run(to_row(run));
    results_->reload();
    if (run.status != "failed")
      status_->setText(tr("Saved \u201c%1\u201d (%2, %3). See the Results tab.")
                           .arg(QString::fromStdString(run.label), QString::fromStdString(run.status),
                                run.points.size() == 1 ? tr("1 point") : tr("%1 points").arg(run.points.size())));
    emit runSaved(id);
  } catch (const std::exception& e) {
    emit errorMessage(tr("could not save the run: %1").arg(e.what()));
  }
}

}  // namespace inferdesk::gui
