#include "gui/app/app_paths.h"

#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

#include "core/backend/cuda_option_table.h"

namespace inferdesk::gui {

CommandLine parse_command_line(const QStringList& args) {
  CommandLine c;
  for (int i = 1; i < args.size(); ++i) {
    const QString& a = args[i];
    if (a == "-h" || a == "--help") {
      c.help = true;
    } else if (a == "--version") {
      c.version = true;
    } else if (a == "--exit-after-start") {
      c.exit_after_start = true;
    } else if (a == "--cuda-option" || a.startsWith("--cuda-option=")) {
      const bool joined = a.startsWith("--cuda-option=");
      if (!joined && i + 1 >= args.size()) {
        c.error = "--cuda-option needs key=value";
        return c;
      }
      try {
        apply_cuda_option(c.cuda, (joined ? a.mid(int(qstrlen("--cuda-option="))) : args[++i]).toStdString());
      } catch (const std::exception& e) {
        c.error = QString::fromStdString(e.what());
        return c;
      }
    } else if (a == "--data-dir") {
      if (i + 1 >= args.size() || args[i + 1].isEmpty()) {
        c.error = "--data-dir needs a folder";
        return c;
      }
      c.data_dir = args[++i];
    } else if (a.startsWith("--data-dir=")) {
      c.data_dir = a.mid(int(qstrlen("--data-dir=")));
      if (c.data_dir.isEmpty()) c.error = "--data-dir needs a folder";
    }
  }
  return c;
}

QString usage_text() {
  return "Usage: inferdesk [--data-dir DIR] [--cuda-option KEY=VALUE ...] [Qt options]\n"
         "\n"
         "InferDesk: chat with open models on your own GPU or CPU.\n"
         "\n"
         "  --data-dir DIR      keep chats, the model list and settings in DIR\n"
         "                      (default: $XDG_DATA_HOME/inferdesk, i.e. ~/.local/share/inferdesk)\n"
         "  --exit-after-start  open the window and quit at once (a start-up check)\n"
         "  --cuda-option KEY=VALUE  CUDA backend tuning, repeatable (defaults shown):\n" +
         QString::fromStdString(cuda_option_help()) +
         "  --version           print the version\n"
         "  -h, --help          this text\n"
         "\n"
         "Without a display, use the command-line tool: inferdesk-cli --help\n";
}

bool has_display() {
  return !qEnvironmentVariableIsEmpty("DISPLAY") || !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") ||
         !qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM");
}

QString no_display_message() {
  return "inferdesk: this is a desktop application and there is no display to open its window on\n"
         "(neither DISPLAY nor WAYLAND_DISPLAY is set, and QT_QPA_PLATFORM is not set).\n"
         "On a machine without a display use the command-line tool instead:\n"
         "    inferdesk-cli --help          (in a build tree: build/apps/cli/inferdesk-cli)\n"
         "To run the window anyway: start it under a virtual X server (xvfb-run inferdesk) or\n"
         "set QT_QPA_PLATFORM=offscreen.\n";
}

QString resolve_data_dir(const QString& override, QString* error) {
  QString dir = override;
  if (dir.isEmpty()) {
    // XDG: $XDG_DATA_HOME/inferdesk (QStandardPaths adds the application name).
    dir = QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation);
    if (dir.isEmpty()) {
      if (error) *error = "cannot find a folder for the application's data (is HOME set?)";
      return {};
    }
  }
  const QString abs = QDir::cleanPath(QFileInfo(dir).absoluteFilePath());
  if (QFileInfo(abs).exists() && !QFileInfo(abs).isDir()) {
    if (error) *error = abs + " exists and is not a folder";
    return {};
  }
  if (!QDir().mkpath(abs)) {
    if (error) *error = "cannot create the data folder " + abs;
    return {};
  }
  return abs;
}

QString database_path(const QString& data_dir) { return QDir(data_dir).filePath("inferdesk.db"); }

}  // namespace inferdesk::gui
