// A per-layer x per-expert heatmap of routed tokens for MoE models (EngineStats::expert_counts):
// one cell per (layer, expert), coloured on a perceptual scale from 0 to the largest count, with a
// colour bar labelled in tokens and a tooltip giving the exact count and the expert's share of its
// layer. Dense layers of a MoE model (qwen2_moe's mlp_only_layers) are drawn as one hatched band
// labelled "dense layer"; a shared expert (qwen2_moe), which sees every token of a MoE layer, has
// a column of its own after a gap. Before any token is routed the grid is drawn empty with a line
// saying so. The tooltip follows the counts while the mouse rests on a cell (also after a
// focus change elsewhere in the application made Qt hide it). Drawn by hand in
// paintEvent; colours come from the palette (theme.h statusColors).
#pragma once

#include <QWidget>

#include <cstdint>
#include <vector>

namespace inferdesk::gui {

class ExpertHeatmap : public QWidget {
  Q_OBJECT

 public:
  explicit ExpertHeatmap(QWidget* parent = nullptr);

  // The model's shape: which layers route to experts (empty: all of them), and whether a shared
  // expert exists (with `expertsPerToken`, the shared expert's count is a layer's routed total / k).
  // Clears the counts.
  void setShape(int layers, int experts, const std::vector<bool>& moeLayers, bool sharedExpert, int expertsPerToken);
  // counts has layers * experts entries, layer-major; anything else clears the counts. Sets the
  // shape (all layers MoE, no shared expert) when none matches.
  void setCounts(int layers, int experts, const std::vector<int64_t>& counts);
  void clear();

  int layers() const { return layers_; }
  int experts() const { return experts_; }
  int columns() const { return experts_ + (shared_ ? 1 : 0); }  // the shared expert is the last
  bool isMoeLayer(int layer) const;
  int moeLayerCount() const;
  bool hasSharedExpert() const { return shared_; }
  int64_t count(int layer, int expert) const;  // expert == experts(): the shared expert
  int64_t totalRouted() const;
  int nonZeroCells() const;
  // The cell under a widget position: {layer, column}, or {-1, -1}.
  QPoint cellAt(const QPoint& pos) const;
  QRect cellRect(int layer, int column) const;
  // The tooltip text for a cell ("layer 3, expert 17: 1,204 tokens (9.4% of the layer's
  // routing)"; "layer 1: dense layer (no experts)"; "layer 0, shared expert: ...").
  QString cellText(int layer, int column) const;
  // The tooltip shown now (empty when none).
  QString shownToolTip() const { return shown_tip_; }
  // The colour of a value in [0, 1] on the scale.
  static QColor colorAt(double t);

  QSize sizeHint() const override { return {480, 260}; }
  QSize minimumSizeHint() const override { return {240, 140}; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void hideEvent(QHideEvent* event) override;
  void leaveEvent(QEvent* event) override;

 private:
  QRect gridRect() const;
  void paintCells(class QPainter& p) const;
  void paintLabels(class QPainter& p) const;
  void showTip(const QPoint& globalPos, const QPoint& cell);
  void forgetTip();  // the mouse no longer rests on the cell whose tooltip was asked for

  int layers_ = 0;
  int experts_ = 0;
  int k_ = 0;
  bool shared_ = false;
  std::vector<bool> moe_layers_;
  std::vector<int64_t> counts_;
  std::vector<int64_t> layer_totals_;
  int64_t max_ = 0;
  QPoint hover_{-1, -1};
  QPoint tip_cell_{-1, -1};
  QPoint tip_pos_;
  QString shown_tip_;
};

}  // namespace inferdesk::gui
