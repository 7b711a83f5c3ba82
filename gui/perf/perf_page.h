// The Performance page: live Qt Charts fed by the EngineController — decode tokens/s over time,
// time to first token per request, KV-cache blocks used / total, GPU and process memory,
// running / waiting requests — plus a per-layer x per-expert heatmap of routed tokens for MoE
// models. Charts show the last two minutes; the line above them shows the latest figures, or
// "idle" when nothing runs. Token rates are measured here from the engine's cumulative counters
// against a Clock (rate_meter.h), so they fall to zero when generation stops instead of holding
// the last busy value.
#pragma once

#include <QWidget>

#include "core/engine/stats.h"
#include "gui/app/app_context.h"
#include "gui/engine/engine_controller.h"
#include "gui/perf/rate_meter.h"

class QLabel;
class QLineSeries;

namespace inferdesk::gui {

class ElidedLabel;
class ExpertHeatmap;
class TimeSeriesChart;

class PerfPage : public QWidget {
  Q_OBJECT

 public:
  // `clock` (not owned) measures time for the rates and the charts' x axis; null: the real clock.
  PerfPage(AppContext& ctx, QWidget* parent = nullptr, const Clock* clock = nullptr);

  static constexpr double kWindowSeconds = 120;

  QLineSeries* decodeSeries() const { return decode_; }
  QLineSeries* ttftSeries() const { return ttft_; }
  QLineSeries* kvUsedSeries() const { return kv_used_; }
  QLineSeries* kvTotalSeries() const { return kv_total_; }
  QLineSeries* gpuMemorySeries() const { return gpu_mem_; }
  QLineSeries* processMemorySeries() const { return rss_; }
  QLineSeries* runningSeries() const { return running_; }
  QLineSeries* waitingSeries() const { return waiting_; }
  ExpertHeatmap* heatmap() const { return heatmap_; }
  ElidedLabel* heatmapCaption() const { return heatmap_note_; }
  QLabel* headline() const { return headline_; }
  TimeSeriesChart* decodeChart() const { return decode_chart_; }
  TimeSeriesChart* requestsChart() const { return req_chart_; }
  QList<TimeSeriesChart*> charts() const;
  int requestsSeen() const { return requests_; }
  double decodeRate() const { return decode_rate_.rate(); }
  double promptRate() const { return prompt_rate_.rate(); }

 public slots:
  void onStats(const inferdesk::EngineStats& stats);
  void onFinished(const QString& key, const inferdesk::gui::GenerationStats& stats);
  void onModelLoaded(const inferdesk::gui::ModelSummary& model);
  void onModelUnloaded();

 private:
  void buildUi();
  double now() const { return clock_.now() - start_; }
  QString headlineText(const EngineStats& s) const;

  AppContext& ctx_;
  SteadyClock steady_;
  const Clock& clock_;
  double start_ = 0;  // the charts' time 0 (the last load)
  RateMeter decode_rate_;
  RateMeter prompt_rate_;
  QLabel* headline_ = nullptr;
  QLabel* model_ = nullptr;
  TimeSeriesChart* decode_chart_ = nullptr;
  TimeSeriesChart* ttft_chart_ = nullptr;
  TimeSeriesChart* kv_chart_ = nullptr;
  TimeSeriesChart* mem_chart_ = nullptr;
  TimeSeriesChart* req_chart_ = nullptr;
  QLineSeries* decode_ = nullptr;
  QLineSeries* ttft_ = nullptr;
  QLineSeries* kv_used_ = nullptr;
  QLineSeries* kv_total_ = nullptr;
  QLineSeries* gpu_mem_ = nullptr;
  QLineSeries* rss_ = nullptr;
  QLineSeries* running_ = nullptr;
  QLineSeries* waiting_ = nullptr;
  ExpertHeatmap* heatmap_ = nullptr;
  ElidedLabel* heatmap_note_ = nullptr;
  int requests_ = 0;
  bool gpu_ = false;
};

}  // namespace inferdesk::gui
