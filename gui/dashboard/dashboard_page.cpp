#include "gui/dashboard/dashboard_page.h"

#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QVBoxLayout>

#include "core/store/store.h"
#include "gui/dashboard/dashboard_runner.h"
#include "gui/dashboard/endpoint_panel.h"
#include "gui/dashboard/metric_definitions.h"
#include "gui/dashboard/reference_view.h"
#include "gui/dashboard/results_view.h"
#include "gui/perf/time_series_chart.h"
#include "gui/server/server_controller.h"

namespace inferdesk::gui {

DashboardPage::DashboardPage(AppContext& ctx, QWidget* parent) : QWidget(parent), ctx_(ctx) {
  runner_ = new DashboardRunner(this);
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(8, 8, 8, 8);
  tabs_ = new QTabWidget(this);
  tabs_->setObjectName("dashboardTabs");
  v->addWidget(tabs_);
  tabs_->addTab(buildRunTab(), tr("Run"));
  results_ = new ResultsView(ctx_, this);
  tabs_->addTab(results_, tr("Results"));
  reference_ = new ReferenceView(load_reference(), this);
  tabs_->addTab(reference_, tr("Published (not measured here)"));
  connect(endpoints_, &EndpointPanel::errorMessage, this, &DashboardPage::errorMessage);
  connect(results_, &ResultsView::errorMessage, this, &DashboardPage::errorMessage);
  connect(runner_, &DashboardRunner::progress, this, [this](int done, int total) {
    progress_->setMaximum(total);
    progress_->setValue(done);
  });
  connect(runner_, &DashboardRunner::requestDone, this, [this](const QVector<double>& times, qint64 tokens) {
    // Quarter-second buckets: a short run still draws a curve while it goes.
    constexpr double kWidth = 0.25;
    const double per_chunk = times.isEmpty() ? 0 : double(tokens) / times.size();
    for (double t : times) live_buckets_[static_cast<int>(t / kWidth)] += per_chunk;
    live_->clearAll();
    auto* s = qobject_cast<QLineSeries*>(live_->chart()->series().value(0));
    for (const auto& [b, n] : live_buckets_) live_->append(s, (b + 0.5) * kWidth, n / kWidth);
    live_->commit();
  });
  connect(runner_, &DashboardRunner::pointFinished, this, [this](int i, int c, double tput) {
    status_->setText(tr("Point %1 (concurrency %2): %3 output tok/s").arg(i + 1).arg(c).arg(tput, 0, 'f', 1));
  });
  connect(runner_, &DashboardRunner::finished, this, &DashboardPage::onFinished);
  applyPreset(0);
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
  v->addWidget(buildWorkloadBox());
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
  live_->setToolTip(metric_definition("tok_s_over_time"));
  live_->setMinimumHeight(220);
  v->addWidget(live_, 1);
  splitter->setStretchFactor(1, 2);
  splitter->setSizes({360, 800});
  connect(run_, &QPushButton::clicked, this, [this] { startRun(); });
  connect(stop_, &QPushButton::clicked, this, &DashboardPage::stopRun);
  return tab;
}

QWidget* DashboardPage::buildWorkloadBox() {
  auto* box = new QGroupBox(tr("Workload (random prompts, vLLM's random dataset)"), this);
  auto* form = new QFormLayout(box);
  preset_ = new QComboBox(box);
  preset_->setObjectName("workloadPreset");
  for (const auto& p : workload_presets()) preset_->addItem(p.name);
  auto spin = [box](int lo, int hi) {
    auto* s = new QSpinBox(box);
    s->setRange(lo, hi);
    return s;
  };
  input_ = spin(1, 131072);
  output_ = spin(1, 32768);
  requests_ = spin(1, 100000);
  seed_ = spin(0, 1 << 30);
  vocab_ = spin(11, 1 << 24);
  vocab_->setToolTip(tr("Prompt token ids are drawn below this value: keep it under the smallest vocabulary "
                        "of the engines you compare."));
  concurrency_ = new QLineEdit(box);
  concurrency_->setObjectName("concurrencies");
  concurrency_->setToolTip(tr("Maximum concurrent requests per sweep point, e.g. 1, 2, 4 (0: no cap)"));
  label_ = new QLineEdit(box);
  label_->setPlaceholderText(tr("the endpoint's name"));
  form->addRow(tr("Preset"), preset_);
  form->addRow(tr("Input tokens"), input_);
  form->addRow(tr("Output tokens"), output_);
  form->addRow(tr("Requests per point"), requests_);
  form->addRow(tr("Max concurrency sweep"), concurrency_);
  form->addRow(tr("Seed"), seed_);
  form->addRow(tr("Token ids below"), vocab_);
  form->addRow(tr("Run label"), label_);
  connect(preset_, &QComboBox::activated, this, &DashboardPage::applyPreset);
  return box;
}

void DashboardPage::applyPreset(int index) {
  const auto presets = workload_presets();
  if (index < 0 || index >= static_cast<int>(presets.size())) return;
  WorkloadSpec w = presets[static_cast<size_t>(index)].spec;
  w.seed = static_cast<uint64_t>(seed_->value());
  w.token_id_max = vocab_->value() > 11 ? vocab_->value() : w.token_id_max;
  setWorkload(w);
}

WorkloadSpec DashboardPage::workload() const {
  WorkloadSpec w;
  w.preset = preset_->currentText();
  w.input_len = input_->value();
  w.output_len = output_->value();
  w.requests_per_point = requests_->value();
  w.concurrencies = parse_concurrencies(concurrency_->text());
  w.seed = static_cast<uint64_t>(seed_->value());
  w.token_id_max = vocab_->value();
  return w;
}

void DashboardPage::setWorkload(const WorkloadSpec& w) {
  input_->setValue(w.input_len);
  output_->setValue(w.output_len);
  requests_->setValue(w.requests_per_point);
  concurrency_->setText(concurrencies_text(w.concurrencies));
  seed_->setValue(static_cast<int>(w.seed));
  vocab_->setValue(w.token_id_max);
}

bool DashboardPage::startRun() {
  const WorkloadSpec w = workload();
  if (runner_->isRunning()) return false;
  if (w.concurrencies.empty()) {
    emit errorMessage(tr("Write the sweep as whole numbers separated by commas, e.g. 1, 2, 4."));
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
  const QString label = label_->text().isEmpty() ? QString::fromStdString(target.name) : label_->text();
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

void DashboardPage::onFinished(const DashboardRun& run) {
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
      status_->setText(tr("Saved \u201c%1\u201d (%2, %3 points). See the Results tab.")
                           .arg(QString::fromStdString(run.label), QString::fromStdString(run.status))
                           .arg(run.points.size()));
    emit runSaved(id);
  } catch (const std::exception& e) {
    emit errorMessage(tr("could not save the run: %1").arg(e.what()));
  }
}

}  // namespace inferdesk::gui
