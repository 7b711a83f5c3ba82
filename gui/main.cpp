// inferdesk: the desktop application. Checks for a display before Qt needs one, finds the data
// folder (XDG or --data-dir), opens the session (database + engine thread; a database that cannot
// be opened gets gui/app/database_problem_dialog.h) and shows the window.
#include <QApplication>
#include <QMessageBox>
#include <QTimer>

#include <cstdio>
#include <memory>

#include "gui/app/app_paths.h"
#include "gui/app/app_session.h"
#include "gui/app/database_problem_dialog.h"
#include "gui/app/main_window.h"

using namespace inferdesk::gui;

int main(int argc, char** argv) {
  QStringList args;
  for (int i = 0; i < argc; ++i) args << QString::fromLocal8Bit(argv[i]);
  const CommandLine cl = parse_command_line(args);
  if (!cl.error.isEmpty()) {
    std::fprintf(stderr, "inferdesk: %s\n\n%s", qPrintable(cl.error), qPrintable(usage_text()));
    return 2;
  }
  if (cl.help) {
    std::printf("%s", qPrintable(usage_text()));
    return 0;
  }
  if (cl.version) {
    std::printf("inferdesk %s\n", INFERDESK_VERSION);
    return 0;
  }
  if (!has_display()) {
    std::fprintf(stderr, "%s", qPrintable(no_display_message()));
    return 2;
  }
  QApplication::setApplicationName("inferdesk");
  QApplication::setApplicationDisplayName("InferDesk");
  QApplication::setApplicationVersion(INFERDESK_VERSION);
  QApplication app(argc, argv);

  QString error;
  const QString data_dir = resolve_data_dir(cl.data_dir, &error);
  if (data_dir.isEmpty()) {
    std::fprintf(stderr, "inferdesk: %s\n", qPrintable(error));
    QMessageBox::critical(nullptr, "InferDesk", error);
    return 1;
  }
  // A database that cannot be opened gets a dialog: recover it (when damaged), another folder, quit.
  std::unique_ptr<AppSession> session;
  const auto open = [&](const QString& dir) { session = std::make_unique<AppSession>(dir, cl.cuda); };
  if (open_data_folder(data_dir, open, interactive_prompts()).isEmpty()) return 1;
  int rc = 0;
  {
    MainWindow window(session->context());
    window.show();
    if (cl.exit_after_start) QTimer::singleShot(0, &app, [&app] { app.quit(); });
    rc = app.exec();
  }
  session.reset();
  return rc;
}
