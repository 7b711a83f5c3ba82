#include "gui/app/window_geometry.h"

#include <algorithm>

namespace inferdesk::gui {

QRect fitToScreen(const QRect& frame, const QRect& available, const QSize& minimum) {
  if (available.isEmpty()) return frame;
  const int w = std::clamp(frame.width(), std::min(minimum.width(), available.width()), available.width());
  const int h = std::clamp(frame.height(), std::min(minimum.height(), available.height()), available.height());
  const int x = std::clamp(frame.x(), available.left(), available.right() + 1 - w);
  const int y = std::clamp(frame.y(), available.top(), available.bottom() + 1 - h);
  return {x, y, w, h};
}

}  // namespace inferdesk::gui
