#include "gui/perf/nice_axis.h"

#include <cmath>

namespace inferdesk::gui {

namespace {

// The smallest 1, 2, 2.5 or 5 x 10^k that is >= v (v > 0).
double nice_step(double v) {
  const double decade = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * decade >= v * (1 - 1e-9)) return m * decade;
  return 10 * decade;
}

}  // namespace

// Shows [lo, hi] with about five round ticks anchored at 0 ("0 25 50 75 100", "0 0.2 0.4"),
// labels carrying as many decimals as the tick interval needs; `widen` rounds hi up to a tick.
void set_nice_range(QValueAxis* axis, double lo, double hi, double min_interval, bool widen, bool integer) {
  double interval = std::max(min_interval, nice_step(std::max(hi - lo, 1e-9) / 5));
  if (integer && std::floor(interval) != interval) interval = std::ceil(interval / 5) * 5;  // 2.5 -> 5
  if (widen) hi = lo + std::ceil((hi - lo) / interval - 1e-9) * interval;
  if (axis->tickType() != QValueAxis::TicksDynamic) {
    axis->setTickType(QValueAxis::TicksDynamic);
    axis->setTickAnchor(0);
  }
  // Every setter re-lays out the axis and builds a label per tick: touch only what changed, and
  // in the order that never passes through a state with many ticks (a wide range with the old
  // small interval would create thousands of labels for one frame).
  auto set_interval = [&] {
    if (axis->tickInterval() == interval) return;
    axis->setTickInterval(interval);
    int decimals = 0;  // as many as the interval needs to be exact (0.25: 2)
    while (decimals < 4) {
      const double scaled = interval * std::pow(10.0, decimals);
      if (std::abs(scaled - std::round(scaled)) < 1e-6 * scaled) break;
      ++decimals;
    }
    const QString format = QString("%.%1f").arg(decimals);
    if (axis->labelFormat() != format) axis->setLabelFormat(format);
  };
  auto set_bounds = [&] {
    if (axis->min() != lo || axis->max() != hi) axis->setRange(lo, hi);
  };
  if (interval >= axis->tickInterval()) {
    set_interval();
    set_bounds();
  } else {
    set_bounds();
    set_interval();
  }
}

}  // namespace inferdesk::gui
