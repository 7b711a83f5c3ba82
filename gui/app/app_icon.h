// The application icon (resources/icons/io.inferdesk.InferDesk.svg, compiled into the binary with
// PNG renditions in gui/resources/inferdesk.qrc).
#pragma once

#include <QIcon>

namespace inferdesk::gui {

// The SVG where Qt can draw SVG icons, the PNG renditions always.
QIcon appIcon();

}  // namespace inferdesk::gui
