// Where a restored window may go: a saved size and place from another screen (or from a window
// that content once made too wide) is brought inside the screen's available area, never larger
// than it, and never smaller than the window's minimum.
#pragma once

#include <QRect>
#include <QSize>

namespace inferdesk::gui {

// `frame` moved and shrunk to lie inside `available` (its size at least `minimum` where the
// screen allows; a minimum larger than the screen is cut to the screen).
QRect fitToScreen(const QRect& frame, const QRect& available, const QSize& minimum);

}  // namespace inferdesk::gui
