// inferdesk: the desktop application. Checks for a display before Qt needs one, finds the data
// folder (XDG or --data-dir), opens the session (database + engine thread) and shows the window.
#include <QApplication>
#include <QMessageBox>
#include <QTimer>

#include <cstdio>
#include <exception>
#include <memory>

#include "gui/app/app_paths.h"
#include "gui/app/app_session.h"
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
  std::unique_ptr<AppSession> session;
  try {
    session = std::make_unique<AppSession>(data_dir, cl.cuda);
  } catch (const std::exception& e) {
    const QString msg = QString("cannot open the data in %1: %2").arg(data_dir, e.what());
    std::fprintf(stderr, "inferdesk: %s\n", qPrintable(msg));
    QMessageBox::critical(nullptr, "InferDesk", msg);
    return 1;
  }
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
