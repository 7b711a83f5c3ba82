// Round axis ticks for every chart of the app (live performance plots, dashboard results):
// about five ticks at 1, 2, 2.5 or 5 x 10^k anchored at 0, labels with just the decimals the
// interval needs; counts get whole-number intervals.
#pragma once

#include <QValueAxis>

namespace inferdesk::gui {

// Shows [lo, hi]; `widen` rounds hi up to the next tick; `integer` keeps the interval whole.
void set_nice_range(QValueAxis* axis, double lo, double hi, double min_interval, bool widen, bool integer = false);

}  // namespace inferdesk::gui
