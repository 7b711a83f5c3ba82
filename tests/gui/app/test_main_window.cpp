// The application shell: command line and data folder, the no-display refusal (exit code 2,
// pointing to inferdesk-cli), the main window's pages and page switching, a start-up of the real
// executable, and screenshots of the main window on the Models and Performance pages.
#include <QLabel>
#include <QLineSeries>
#include <QListWidget>
#include <QProcess>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include "gui/app/app_paths.h"
#include "gui/app/app_session.h"
#include "gui/app/main_window.h"
#include "gui/models/models_page.h"
#include "gui/perf/perf_page.h"
#include "tests/gui/support/gui_test_support.h"

using namespace inferdesk;
using namespace inferdesk::gui;
using inferdesk::gui::test::fixture;

namespace {

struct ProcessResult {
  int exit_code = -1;
  QString out, err;
};

ProcessResult runApp(const QStringList& args, const QProcessEnvironment& env) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(INFERDESK_GUI_EXE, args);
  ProcessResult r;
  if (!p.waitForFinished(60000)) {
    p.kill();
    p.waitForFinished();
    return r;
  }
  r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

QProcessEnvironment withoutDisplay() {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  for (const char* v : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}) env.remove(v);
  return env;
}

}  // namespace

class TestMainWindow : public QObject {
  Q_OBJECT

 private slots:
  void parsesTheCommandLine() {
    CommandLine c = parse_command_line({"inferdesk", "--data-dir", "/tmp/x", "-platform", "offscreen"});
    QVERIFY(c.error.isEmpty());
    QCOMPARE(c.data_dir, QString("/tmp/x"));
    c = parse_command_line({"inferdesk", "--data-dir=/a b"});
    QCOMPARE(c.data_dir, QString("/a b"));
    QVERIFY(!parse_command_line({"inferdesk", "--data-dir"}).error.isEmpty());
    QVERIFY(!parse_command_line({"inferdesk", "--data-dir="}).error.isEmpty());
    QVERIFY(parse_command_line({"inferdesk", "--help"}).help);
    QVERIFY(parse_command_line({"inferdesk", "--version"}).version);
    QVERIFY(parse_command_line({"inferdesk"}).data_dir.isEmpty());
  }

  void resolvesTheDataFolder() {
    QTemporaryDir tmp;
    QString error;
    const QString nested = tmp.path() + "/a/b/c";
    QCOMPARE(resolve_data_dir(nested, &error), nested);  // created
    QVERIFY(QFileInfo(nested).isDir());
    std::ofstream((tmp.path() + "/file").toStdString()) << "x";
    QVERIFY(resolve_data_dir(tmp.path() + "/file", &error).isEmpty());
    QVERIFY(error.contains("not a folder"));
    // Default: the XDG data location.
    const QByteArray old = qgetenv("XDG_DATA_HOME");
    qputenv("XDG_DATA_HOME", (tmp.path() + "/xdg").toUtf8());
    error.clear();
    const QString def = resolve_data_dir({}, &error);
    qputenv("XDG_DATA_HOME", old);
    QVERIFY2(def.startsWith(tmp.path() + "/xdg/"), qPrintable(def + " " + error));
    QCOMPARE(database_path(nested), nested + "/inferdesk.db");
  }

  void detectsADisplay() {
    // The test runs with QT_QPA_PLATFORM=offscreen: a platform was named explicitly.
    QVERIFY(has_display());
    QVERIFY(no_display_message().contains("inferdesk-cli"));
  }

  void refusesToStartWithoutADisplay() {
    QTemporaryDir tmp;
    const ProcessResult r = runApp({"--data-dir", tmp.path()}, withoutDisplay());
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains("inferdesk-cli"), qPrintable(r.err));
    QVERIFY(r.err.contains("display"));
    QVERIFY(!QFileInfo::exists(tmp.path() + "/inferdesk.db"));  // nothing was created
  }

  void executableStartsAndHonoursDataDir() {
    QTemporaryDir tmp;
    QProcessEnvironment env = withoutDisplay();
    env.insert("QT_QPA_PLATFORM", "offscreen");
    const QString dir = tmp.path() + "/data";
    const ProcessResult r = runApp({"--data-dir", dir, "--exit-after-start"}, env);
    QCOMPARE(r.exit_code, 0);
    QVERIFY(QFileInfo::exists(dir + "/inferdesk.db"));
    const ProcessResult help = runApp({"--help"}, env);
    QCOMPARE(help.exit_code, 0);
    QVERIFY(help.out.contains("--data-dir"));
    QCOMPARE(runApp({"--data-dir"}, env).exit_code, 2);
  }

  void windowHasThePagesAndSwitchesBetweenThem() {
    QTemporaryDir tmp;
    AppSession session(tmp.path());
    MainWindow w(session.context());
    QVERIFY(w.chatPage());
    QVERIFY(w.modelsPage());
    QVERIFY(w.perfPage());
    QCOMPARE(w.sidebar()->count(), 4);
    QCOMPARE(w.currentPage(), Page::Models);  // nothing registered yet: start where to add one
    QVERIFY(session.context().show_page);
    session.context().show_page(Page::Performance);
    QCOMPARE(w.currentPage(), Page::Performance);
    w.sidebar()->setCurrentRow(0);
    QCOMPARE(w.currentPage(), Page::Chat);
    w.close();  // saves the window geometry in the settings
    QVERIFY(session.context().settings.get("window/geometry").has_value());
  }

  void startsOnChatOnceAModelIsRegistered() {
    QTemporaryDir tmp;
    {
      AppSession session(tmp.path());
      QVERIFY(session.context().models.add(fixture("tiny-chat").toStdString(), "tiny-chat") > 0);
    }
    AppSession session(tmp.path());
    MainWindow w(session.context());
    QCOMPARE(w.currentPage(), Page::Chat);
    QCOMPARE(w.modelsPage()->manager()->table()->rowCount(), 1);
  }

  void screenshotsOfTheModelsAndPerformancePages() {
    test::ShownMainWindow app;
    MainWindow& w = app.window;
    AppSession& session = app.session;
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    ModelManager* mm = w.modelsPage()->manager();
    QVERIFY(mm->addFolder(fixture("qwen3_moe")).ok);
    const qint64 id = mm->addFolder(fixture("tiny-chat")).id;
    QVERIFY(w.modelsPage()->selectModel(id));
    EngineController* c = session.engine();
    test::ControllerRelay relay(c);
    QSignalSpy loaded(&relay, &test::ControllerRelay::modelLoaded);
    QVERIFY(mm->load(id, "cpu", 4096));
    QVERIFY(loaded.wait(30000));
    QTRY_VERIFY(w.modelsPage()->statusLabel()->text().contains("loaded on CPU"));
    QVERIFY(!test::saveScreenshot(&w, "main_window_models").isEmpty());
    // Generate a little so the performance page has something to show.
    QSignalSpy finished(&relay, &test::ControllerRelay::finished);
    const auto ids = c->renderPrompt({{"user", "Hello, who are you?"}}).ids;
    QVERIFY(!ids.empty());
    for (int i = 0; i < 3; ++i) {
      SamplingParams p;
      p.temperature = 0.7f;
      p.max_tokens = 1000;  // three at once fit the 4096-token cache
      p.ignore_eos = true;
      const QString key = QString("k%1").arg(i);
      QMetaObject::invokeMethod(c, [c, ids, p, key] { c->submit(key, ids, p); });
    }
    w.showPage(Page::Performance);
    while (finished.count() < 3) QVERIFY(finished.wait(30000));
    QTest::qWait(300);
    QVERIFY(w.perfPage()->decodeSeries()->count() > 0);
    QVERIFY(!test::saveScreenshot(&w, "main_window_performance").isEmpty());
  }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
