#include "gui/perf/perf_page.h"

#include <QGridLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineSeries>
#include <QVBoxLayout>

#include "gui/app/elided_label.h"
#include "gui/models/model_facts.h"
#include "gui/perf/expert_heatmap.h"
#include "gui/perf/time_series_chart.h"

namespace inferdesk::gui {

namespace {
constexpr double kMiB = 1024.0 * 1024.0;
}

PerfPage::PerfPage(AppContext& ctx, QWidget* parent, const Clock* clock)
    : QWidget(parent), ctx_(ctx), clock_(clock ? *clock : steady_), decode_rate_(clock_), prompt_rate_(clock_) {
  start_ = clock_.now();
  buildUi();
  if (EngineController* engine = ctx_.engine) {
    connect(engine, &EngineController::statsUpdated, this, &PerfPage::onStats);
    connect(engine, &EngineController::finished, this, &PerfPage::onFinished);
    connect(engine, &EngineController::modelLoaded, this, &PerfPage::onModelLoaded);
    connect(engine, &EngineController::modelUnloaded, this, &PerfPage::onModelUnloaded);
    if (const auto loaded = engine->loadedModel()) onModelLoaded(*loaded);
  }
}

void PerfPage::buildUi() {
  auto* root = new QVBoxLayout(this);
  auto* top = new QHBoxLayout();
  top->addWidget(new QLabel(tr("<h2>Performance</h2>")));
  model_ = new QLabel(tr("no model loaded"));
  top->addStretch();
  top->addWidget(model_);
  root->addLayout(top);
  headline_ = new QLabel(tr("Load a model and generate: the charts follow the engine live."));
  headline_->setTextFormat(Qt::RichText);
  root->addWidget(headline_);

  const QColor blue(31, 119, 180), orange(255, 127, 14), green(44, 160, 44), red(214, 39, 40), purple(148, 103, 189);
  auto* grid = new QGridLayout();
  decode_chart_ = new TimeSeriesChart(tr("Decode tokens/s (2 s average)"), tr("time (s)"), tr("tokens/s"),
                                      kWindowSeconds);
  decode_ = decode_chart_->addSeries(tr("decode"), blue);
  ttft_chart_ = new TimeSeriesChart(tr("Time to first token per request"), tr("request #"), tr("ms"), 0);
  ttft_ = ttft_chart_->addSeries(tr("TTFT"), orange);
  ttft_->setPointsVisible(true);
  kv_chart_ = new TimeSeriesChart(tr("KV-cache blocks"), tr("time (s)"), tr("blocks"), kWindowSeconds);
  kv_used_ = kv_chart_->addSeries(tr("used"), green);
  kv_total_ = kv_chart_->addSeries(tr("total"), QColor(120, 120, 120));
  mem_chart_ = new TimeSeriesChart(tr("Memory"), tr("time (s)"), tr("MiB"), kWindowSeconds);
  gpu_mem_ = mem_chart_->addSeries(tr("GPU used"), red);
  rss_ = mem_chart_->addSeries(tr("process (RSS)"), purple);
  kv_chart_->setIntegerValues(true);
  req_chart_ = new TimeSeriesChart(tr("Requests"), tr("time (s)"), tr("requests"), kWindowSeconds);
  running_ = req_chart_->addSeries(tr("running"), blue);
  waiting_ = req_chart_->addSeries(tr("waiting"), orange);
  req_chart_->setIntegerValues(true);

  auto* heat_box = new QGroupBox(tr("Routed tokens per layer × expert (since load)"));
  auto* heat_layout = new QVBoxLayout(heat_box);
  heatmap_ = new ExpertHeatmap();
  // One elided line (the whole caption in its tooltip): a wrapping label would make the row ask
  // for its height-for-width and squeeze the charts above it.
  heatmap_note_ = new ElidedLabel(tr("Hover a cell for its count. Dense models have no experts."));
  QFont small = heatmap_note_->font();
  small.setPointSizeF(small.pointSizeF() * 0.85);
  heatmap_note_->setFont(small);
  heat_layout->addWidget(heatmap_, 1);
  heat_layout->addWidget(heatmap_note_);

  grid->addWidget(decode_chart_, 0, 0);
  grid->addWidget(ttft_chart_, 0, 1);
  grid->addWidget(kv_chart_, 1, 0);
  grid->addWidget(mem_chart_, 1, 1);
  grid->addWidget(req_chart_, 2, 0);
  grid->addWidget(heat_box, 2, 1);
  // Equal rows whatever the heatmap's caption asks for: size hints are ignored vertically, so
  // no chart is squeezed until its axis labels turn into "…".
  heat_box->setMinimumHeight(180);
  for (QWidget* w :
       std::initializer_list<QWidget*>{decode_chart_, ttft_chart_, kv_chart_, mem_chart_, req_chart_, heat_box})
    w->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Ignored);
  for (int r = 0; r < 3; ++r) grid->setRowStretch(r, 1);
  for (int c = 0; c < 2; ++c) grid->setColumnStretch(c, 1);
  root->addLayout(grid, 1);
}

QList<TimeSeriesChart*> PerfPage::charts() const {
  return {decode_chart_, ttft_chart_, kv_chart_, mem_chart_, req_chart_};
}

void PerfPage::onStats(const EngineStats& s) {
  decode_rate_.update(s.total_generated_tokens);
  prompt_rate_.update(s.total_prompt_tokens);
  const double t = now();
  decode_chart_->append(decode_, t, decode_rate_.rate());
  kv_chart_->append(kv_used_, t, s.kv_blocks_used);
  kv_chart_->append(kv_total_, t, s.kv_blocks_total);
  if (gpu_) mem_chart_->append(gpu_mem_, t, s.memory.device_used / kMiB);
  if (s.process_rss_bytes > 0) mem_chart_->append(rss_, t, s.process_rss_bytes / kMiB);
  req_chart_->append(running_, t, s.running);
  req_chart_->append(waiting_, t, s.waiting);
  for (TimeSeriesChart* c : {decode_chart_, kv_chart_, mem_chart_, req_chart_}) c->commit();
  if (s.num_layers > 0 && s.num_experts > 0) heatmap_->setCounts(s.num_layers, s.num_experts, s.expert_counts);
  headline_->setText(headlineText(s));
}

QString PerfPage::headlineText(const EngineStats& s) const {
  const double decode = decode_rate_.rate(), prompt = prompt_rate_.rate();
  const bool idle = s.running == 0 && s.waiting == 0 && decode == 0 && prompt == 0;
  const double kv_pct = s.kv_blocks_total > 0 ? 100.0 * s.kv_blocks_used / s.kv_blocks_total : 0.0;
  QString text = idle ? tr("<b>idle</b>: nothing is being generated")
                      : tr("<b>%1</b> tokens/s decode &nbsp; <b>%2</b> tokens/s prompt &nbsp; running <b>%3</b>, "
                           "waiting <b>%4</b>")
                            .arg(decode, 0, 'f', 1)
                            .arg(prompt, 0, 'f', 1)
                            .arg(s.running)
                            .arg(s.waiting);
  text +=
      tr(" &nbsp; KV <b>%1 / %2</b> blocks (%3%)").arg(s.kv_blocks_used).arg(s.kv_blocks_total).arg(kv_pct, 0, 'f', 0);
  if (s.process_rss_bytes > 0) text += tr(" &nbsp; process <b>%1</b>").arg(format_bytes(s.process_rss_bytes));
  if (gpu_ && s.memory.device_total > 0)
    text += tr(" &nbsp; GPU <b>%1 / %2</b>")
                .arg(format_bytes(s.memory.device_used), format_bytes(s.memory.device_total));
  return text;
}

void PerfPage::onFinished(const QString&, const GenerationStats& st) {
  ++requests_;
  if (st.tokens == 0) return;
  ttft_chart_->append(ttft_, requests_, st.ttft_s * 1000.0);
  ttft_chart_->commit();
}

void PerfPage::onModelLoaded(const ModelSummary& m) {
  gpu_ = m.backend == "cuda";
  gpu_mem_->setVisible(gpu_);
  model_->setText(tr("%1 on %2").arg(m.name, gpu_ ? "CUDA" : "CPU"));
  requests_ = 0;
  start_ = clock_.now();  // the charts' time axis counts from the load
  decode_rate_.reset();
  prompt_rate_.reset();
  for (TimeSeriesChart* c : charts()) c->clearAll();
  heatmap_->clear();
  if (m.num_experts == 0) {
    heatmap_note_->setFullText(tr("%1 is a dense model: it has no experts.").arg(m.name));
    return;
  }
  heatmap_->setShape(m.num_layers, m.num_experts, m.moe_layers, m.has_shared_expert, m.experts_per_token);
  const int moe = heatmap_->moeLayerCount();
  QStringList dense;
  for (int l = 0; l < m.num_layers; ++l)
    if (!heatmap_->isMoeLayer(l)) dense << QString::number(l);
  QString note = tr("%1 MoE layers × %2 experts, %3 per token").arg(moe).arg(m.num_experts).arg(m.experts_per_token);
  if (!dense.isEmpty())
    note += tr("; %1 %2 dense").arg(dense.size() == 1 ? tr("layer") : tr("layers"), dense.join(", "));
  if (m.has_shared_expert) note += tr("; the shared expert sees every token");
  heatmap_note_->setFullText(tr("%1. Counts are routed tokens since the load; hover a cell for its count.").arg(note));
}

void PerfPage::onModelUnloaded() {
  model_->setText(tr("no model loaded"));
  headline_->setText(tr("<b>idle</b>: no model is loaded"));
}

}  // namespace inferdesk::gui
