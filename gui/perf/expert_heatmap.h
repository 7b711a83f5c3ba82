// A per-layer x per-expert heatmap of routed tokens for MoE models (EngineStats::expert_counts):
// one cell per (layer, expert), coloured on a perceptual scale from the smallest to the largest
// count, with a colour bar and a tooltip giving the exact count and the expert's share of its
// layer. Drawn by hand in paintEvent; no data (dense model) shows a note instead.
#pragma once

#include <QWidget>

#include <cstdint>
#include <vector>

namespace inferdesk::gui {

class ExpertHeatmap : public QWidget {
  Q_OBJECT

 public:
  explicit ExpertHeatmap(QWidget* parent = nullptr);

  // counts has layers * experts entries, layer-major; anything else clears the map.
  void setCounts(int layers, int experts, const std::vector<int64_t>& counts);
  void clear();

  int layers() const { return layers_; }
  int experts() const { return experts_; }
  int64_t count(int layer, int expert) const;
  int nonZeroCells() const;
  // The cell under a widget position: {layer, expert}, or {-1, -1}.
  QPoint cellAt(const QPoint& pos) const;
  QRect cellRect(int layer, int expert) const;
  // The tooltip text for a cell ("layer 3, expert 17: 1,204 tokens (9.4% of the layer)").
  QString cellText(int layer, int expert) const;
  // The colour of a value in [0, 1] on the scale.
  static QColor colorAt(double t);

  QSize sizeHint() const override { return {480, 260}; }
  QSize minimumSizeHint() const override { return {240, 140}; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;

 private:
  QRect gridRect() const;

  int layers_ = 0;
  int experts_ = 0;
  std::vector<int64_t> counts_;
  std::vector<int64_t> layer_totals_;
  int64_t min_ = 0, max_ = 0;
  QPoint hover_{-1, -1};
};

}  // namespace inferdesk::gui
