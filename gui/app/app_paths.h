// Start-up decisions made before any window exists: the command line, whether there is a
// display, and where the data lives (XDG data location, or --data-dir).
#pragma once

#include <QString>
#include <QStringList>

#include "core/backend/cuda_options.h"

namespace inferdesk::gui {

struct CommandLine {
  QString data_dir;               // --data-dir DIR ("" = the XDG default)
  bool help = false;              // -h / --help
  bool version = false;           // --version
  bool exit_after_start = false;  // --exit-after-start: show the window, then quit (smoke test)
  CudaBackendOptions cuda;        // --cuda-option key=value (core/backend/cuda_option_table.h)
  QString error;                  // a malformed option ("" when fine)
};

// Reads our options; everything else (Qt's own options such as -platform) is left for Qt.
CommandLine parse_command_line(const QStringList& args);
QString usage_text();

// True when Qt can open a window: DISPLAY or WAYLAND_DISPLAY is set, or QT_QPA_PLATFORM names a
// platform explicitly (offscreen, vnc, ...).
bool has_display();
QString no_display_message();

// The data folder: `override` when given, else the XDG data location
// ($XDG_DATA_HOME/inferdesk, normally ~/.local/share/inferdesk). Created when missing; returns the
// absolute path, or "" with *error set.
QString resolve_data_dir(const QString& override, QString* error);

// The database file inside a data folder.
QString database_path(const QString& data_dir);

}  // namespace inferdesk::gui
