#include "gui/app/app_icon.h"

#include <QImageReader>

// The resource lives in a static library: its initializer must be referenced to be linked in.
static void init_inferdesk_resources() { Q_INIT_RESOURCE(inferdesk); }

namespace inferdesk::gui {

QIcon appIcon() {
  init_inferdesk_resources();
  QIcon icon;
  if (QImageReader::supportedImageFormats().contains("svg")) icon.addFile(":/icons/inferdesk.svg");
  icon.addFile(":/icons/inferdesk-256.png", QSize(256, 256));
  icon.addFile(":/icons/inferdesk-32.png", QSize(32, 32));
  return icon;
}

}  // namespace inferdesk::gui
