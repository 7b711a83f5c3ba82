// The Performance page: live Qt Charts fed by the EngineController — decode tokens/s over time,
// time to first token per request, KV-cache blocks used / total, GPU and process memory,
// running / waiting requests — plus a per-layer x per-expert heatmap of routed tokens for MoE
// models. Charts show the last two minutes; counters above them show the latest figures.
#pragma once

#include <QElapsedTimer>
#include <QWidget>

#include "core/engine/stats.h"
#include "gui/app/app_context.h"
#include "gui/engine/engine_controller.h"

class QLabel;
class QLineSeries;

namespace inferdesk::gui {

class ExpertHeatmap;
class TimeSeriesChart;

class PerfPage : public QWidget {
  Q_OBJECT

 public:
  PerfPage(AppContext& ctx, QWidget* parent = nullptr);

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
  int requestsSeen() const { return requests_; }

 public slots:
  void onStats(const inferdesk::EngineStats& stats);
  void onFinished(const QString& key, const inferdesk::gui::GenerationStats& stats);
  void onModelLoaded(const inferdesk::gui::ModelSummary& model);
  void onModelUnloaded();

 private:
  void buildUi();
  double now() const { return clock_.elapsed() / 1000.0; }

  AppContext& ctx_;
  QElapsedTimer clock_;
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
  QLabel* heatmap_note_ = nullptr;
  int requests_ = 0;
  bool gpu_ = false;
};

}  // namespace inferdesk::gui
