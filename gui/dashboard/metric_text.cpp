#include "gui/dashboard/metric_text.h"

#include <QHeaderView>
#include <QObject>
#include <QTableWidget>

#include <algorithm>
#include <cmath>

#include "core/bench/metric_definitions.h"

namespace inferdesk::gui {
namespace {

const std::vector<double> kPercents{50, 99};

QString number(double v) {
  if (!std::isfinite(v)) return "\u2013";
  // Four significant digits below 100 (seconds-based tools need them), one decimal above.
  return std::abs(v) >= 100 ? QString::number(v, 'f', 1) : QString::number(v, 'g', 4);
}

QString distribution_text(const bench::Distribution& d) {
  QString s = number(d.mean);
  for (const auto& [p, v] : d.percentiles) s += QString(" \u00b7 p%1 %2").arg(p).arg(number(v));
  return s;
}

// vLLM's row of a point from its saved summary ("vllm.ttft" -> mean/median/p99_ttft_ms).
QString vllm_cell(const bench::MetricDefinition& d, const nlohmann::ordered_json& summary) {
  const std::string stem = d.id.substr(d.id.find('.') + 1);
  auto has = [&](const std::string& key) { return summary.contains(key) && summary[key].is_number(); };
  if (!d.per_request) return has(stem) ? number(summary_value(summary, stem)) : QString("\u2013");  // null: not measured
  const std::string mean = "mean_" + stem + "_ms";
  if (!has(mean)) return {};
  QString s = number(summary_value(summary, mean));
  // vLLM files name the 50th percentile "median" unless p50 was asked for.
  const std::string p50 = has("p50_" + stem + "_ms") ? "p50_" + stem + "_ms" : "median_" + stem + "_ms";
  if (has(p50)) s += QString(" \u00b7 p50 %1").arg(number(summary_value(summary, p50)));
  if (has("p99_" + stem + "_ms")) s += QString(" \u00b7 p99 %1").arg(number(summary_value(summary, "p99_" + stem + "_ms")));
  return s;
}

QString point_title(const DashboardPoint& p, size_t i) {
  if (p.summary.contains("label") && p.summary["label"].is_string())
    return QString::fromStdString(p.summary["label"].get<std::string>());
  if (p.request_rate) return QObject::tr("rate %1").arg(*p.request_rate);
  return p.concurrency > 0 ? QObject::tr("concurrency %1").arg(p.concurrency) : QObject::tr("point %1").arg(i + 1);
}

}  // namespace

QString definition_tooltip(const std::string& id) {
  const bench::MetricDefinition* d = bench::find_metric(id);
  if (!d) return {};
  return QString("<b>%1</b> (%2, %3): %4")
      .arg(QString::fromStdString(d->name).toHtmlEscaped(), QString::fromStdString(d->unit).toHtmlEscaped(),
           QString::fromStdString(d->tool).toHtmlEscaped(), QString::fromStdString(d->definition).toHtmlEscaped());
}

QString over_time_definition() {
  return QObject::tr("Output tokens arriving per time bucket (each content chunk carries its share of its "
                     "request's tokens).") + "<br>" + definition_tooltip("vllm.max_output_tokens_per_s");
}

QTableWidget* make_definitions_table(QWidget* parent) {
  const auto& defs = bench::metric_definitions();
  auto* t = new QTableWidget(static_cast<int>(defs.size()), 4, parent);
  t->setObjectName("metricDefinitions");
  t->setHorizontalHeaderLabels({QObject::tr("Tool"), QObject::tr("Metric"), QObject::tr("Unit"), QObject::tr("Definition")});
  t->verticalHeader()->hide();
  t->setEditTriggers(QAbstractItemView::NoEditTriggers);
  t->setWordWrap(true);
  for (size_t i = 0; i < defs.size(); ++i) {
    const auto& d = defs[i];
    const QString cells[] = {QString::fromStdString(d.tool), QString::fromStdString(d.name),
                             QString::fromStdString(d.unit), QString::fromStdString(d.definition)};
    for (int c = 0; c < 4; ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      item->setData(Qt::UserRole, QString::fromStdString(d.id));
      item->setToolTip(cells[3]);
      t->setItem(static_cast<int>(i), c, item);
    }
  }
  t->setTextElideMode(Qt::ElideNone);
  t->resizeColumnsToContents();
  t->horizontalHeader()->setSectionResizeMode(3, QHeaderView::Stretch);
  t->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);  // wrapped definitions stay whole
  return t;
}

bench::LoadResult load_result_of(const DashboardPoint& point) {
  bench::LoadResult run;
  double end = 0;
  for (const RequestRecord& r : point.requests) {
    bench::RequestResult q;
    q.success = r.success;
    q.error = r.error;
    q.start_s = r.start_s;
    q.ttft_s = r.ttft_s;
    q.latency_s = r.latency_s;
    q.chunk_s = r.chunk_s;
    for (size_t k = 1; k < r.chunk_s.size(); ++k) q.itl_s.push_back(r.chunk_s[k] - r.chunk_s[k - 1]);
    q.chunks = static_cast<int32_t>(r.chunk_s.size());
    q.prompt_tokens = r.prompt_tokens;
    q.output_tokens = r.output_tokens;
    end = std::max(end, r.start_s + r.latency_s);
    run.requests.push_back(std::move(q));
  }
  const double duration = summary_value(point.summary, "duration");
  run.duration_s = duration > 0 ? duration : end;
  return run;
}

void fill_detail_table(QTableWidget* table, const DashboardRun& run) {
  const auto& defs = bench::metric_definitions();
  table->clear();
  table->setRowCount(static_cast<int>(defs.size()));
  table->setColumnCount(static_cast<int>(run.points.size()));
  QStringList rows, cols;
  for (const auto& d : defs) rows << QString("%1 \u00b7 %2 (%3)").arg(QString::fromStdString(d.tool),
                                                                     QString::fromStdString(d.name), QString::fromStdString(d.unit));
  table->setVerticalHeaderLabels(rows);
  for (size_t c = 0; c < run.points.size(); ++c) {
    const DashboardPoint& p = run.points[c];
    cols << point_title(p, c);
    bench::ToolMetrics m;
    if (!p.requests.empty()) {
      const bench::LoadResult lr = load_result_of(p);
      std::vector<int64_t> lens;
      for (const auto& r : lr.requests) lens.push_back(!r.success ? 0 : r.output_tokens > 0 ? r.output_tokens : r.chunks);
      m = bench::tool_metrics(lr, lens, kPercents);
    }
    for (size_t i = 0; i < defs.size(); ++i) {
      const auto& d = defs[i];
      QString text;
      if (d.tool == "vLLM") text = vllm_cell(d, p.summary);
      else if (auto it = m.distributions.find(d.id); it != m.distributions.end()) text = distribution_text(it->second);
      else if (auto f = m.figures.find(d.id); f != m.figures.end()) text = number(f->second);
      auto* item = new QTableWidgetItem(text.isEmpty() ? QObject::tr("\u2013 (no raw records)") : text);
      item->setToolTip(QString::fromStdString(d.definition));
      item->setData(Qt::UserRole, QString::fromStdString(d.id));
      table->setItem(static_cast<int>(i), static_cast<int>(c), item);
    }
  }
  table->setHorizontalHeaderLabels(cols);
  table->resizeColumnsToContents();
}

}  // namespace inferdesk::gui
