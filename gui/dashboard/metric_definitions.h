// What each plotted metric means, as vLLM's `bench serve` defines it — shown as tooltips and in
// the legend table. (core/bench will own metric_definitions(); until then this small table.)
#pragma once

#include <QString>

#include <vector>

namespace inferdesk::gui {

struct MetricDefinition {
  QString key;  // the vLLM result key's stem ("ttft", "output_throughput")
  QString name;
  QString definition;
};

const std::vector<MetricDefinition>& dashboard_metric_definitions();
// The definition of a key ("" when unknown).
QString metric_definition(const QString& key);

}  // namespace inferdesk::gui
