// What the dashboard says about metrics, all from core/bench's metric_definitions() (the one
// list; the GUI keeps none of its own): tooltips for plots, the definitions table, and a run's
// detail table — per point, vLLM's summary beside GenAI-Perf's, llmperf's and guidellm's
// figures, which tool_metrics() computes from the run's raw per-request records.
#pragma once

#include <QString>

#include <string>

#include "core/bench/load_generator.h"
#include "gui/dashboard/dashboard_run.h"

class QTableWidget;
class QWidget;

namespace inferdesk::gui {

// "Time to first token (ms, vLLM): From sending ..." ("" for an unknown id).
QString definition_tooltip(const std::string& id);
// The tok/s-over-time plot's meaning (buckets of chunk arrivals; vLLM's peak figure beside it).
QString over_time_definition();

// Tool, metric, unit, definition: one row per metric_definitions() entry, in its order.
QTableWidget* make_definitions_table(QWidget* parent);

// The run's points as core's LoadResult (the stored records: starts, chunks, latencies, usage).
bench::LoadResult load_result_of(const DashboardPoint& point);
// Rows: every metric of every tool; columns: the run's points. A distribution shows
// "mean · p50 · p99", a figure its value; each row's tooltip is its definition.
void fill_detail_table(QTableWidget* table, const DashboardRun& run);

}  // namespace inferdesk::gui
