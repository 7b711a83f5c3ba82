// The app's local server: in the main window, the switch serves the loaded model on
// localhost:PORT and a real HTTP client (libcurl) gets chat completions from it, streamed and
// not; the request log and the connected-clients count follow; unloading the model stops the
// server; without a model, or on a port that is taken, the switch refuses with a reason.
#include <QCheckBox>
#include <QDockWidget>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QSpinBox>
#include <QToolButton>
#include <QtTest>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gui/server/server_controller.h"
#include "gui/server/server_panel.h"
#include "tests/gui/support/gui_test_support.h"
#include "tests/server/support/http_client.h"

using namespace inferdesk;
using namespace inferdesk::gui;
using inferdesk::gui::test::fixture;
namespace http = inferdesk::test;     // the libcurl client of the server tests
namespace gt = inferdesk::gui::test;  // the GUI test helpers

namespace {

// A port nothing listens on right now (the kernel's pick for a socket bound to port 0).
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const int port = ntohs(a.sin_port);
  close(fd);
  return port;
}

void loadTiny(EngineController* c) {
  QSignalSpy loaded(c, &EngineController::modelLoaded);
  const QString path = fixture("tiny-chat");
  QMetaObject::invokeMethod(
      c, [c, path] { c->loadModel(path, "cpu", 512, 0); }, Qt::QueuedConnection);
  QVERIFY(loaded.wait(60000));
}

http::Json chatBody(bool stream) {
  http::Json j = {{"model", "tiny-chat"},
                  {"messages", http::Json::array({{{"role", "user"}, {"content", "Hello from the test"}}})},
                  {"max_tokens", 8},
                  {"temperature", 0},
                  {"ignore_eos", true},
                  {"stream", stream}};
  return j;
}

}  // namespace

class TestServerPanel : public QObject {
  Q_OBJECT

 private slots:
  void theMainWindowSwitchServesTheLoadedModel() {
    gt::ShownMainWindow app;
    QVERIFY(QTest::qWaitForWindowExposed(&app.window));
    EngineController* engine = app.session.context().engine;
    auto* panel = app.window.findChild<ServerPanel*>();
    auto* dock = app.window.findChild<QDockWidget*>("serverDock");
    auto* button = app.window.findChild<QToolButton*>("serverButton");
    QVERIFY(panel && dock && button);
    QVERIFY(!panel->serveSwitch()->isEnabled());  // nothing loaded yet
    loadTiny(engine);
    QTRY_VERIFY(panel->serveSwitch()->isEnabled());
    button->click();
    QVERIFY(dock->isVisible());
    const int port = free_port();
    panel->portBox()->setValue(port);
    QVERIFY(panel->serveSwitch()->text().contains("Serve the loaded model on localhost:"));
    panel->serveSwitch()->setChecked(true);
    QVERIFY(panel->controller()->isRunning());
    const QString url = panel->controller()->url();
    QCOMPARE(url, QString("http://127.0.0.1:%1").arg(port));
    QVERIFY(panel->urlLabel()->text().contains(url + "/v1"));
    QCOMPARE(button->text(), QString("Local server: on"));

    {
      http::HttpClient client(url.toStdString());
      const http::HttpResponse r = client.post("/v1/chat/completions", chatBody(false));
      QCOMPARE(r.status, 200L);
      const http::Json j = r.json();
      QCOMPARE(j["model"].get<std::string>(), std::string("tiny-chat"));
      QCOMPARE(j["usage"]["completion_tokens"].get<int>(), 8);
      QVERIFY(j["choices"][0]["message"]["content"].is_string());
      const http::HttpClient::Stream s = client.stream("/v1/chat/completions", chatBody(true));
      QCOMPARE(s.status, 200L);
      QVERIFY(s.done);
      QTRY_VERIFY(panel->requestLog()->toPlainText().contains("POST /v1/chat/completions  200  stream"));
      // Both requests logged with their token counts and finish reason.
      QCOMPARE(panel->requestLog()->toPlainText().count(
                   QRegularExpression("POST /v1/chat/completions  200 .* \\+ 8 tokens  length")),
               2);
      // The client keeps its connection open between requests.
      QTRY_COMPARE(panel->clientsLabel()->text(), QString("Connected clients: 1"));
      gt::saveScreenshot(&app.window, "server_panel_serving");
    }
    QTRY_COMPARE(panel->clientsLabel()->text(), QString("Connected clients: 0"));

    // Unloading the model stops the server and says why.
    QMetaObject::invokeMethod(
        engine, [engine] { engine->unload(); }, Qt::QueuedConnection);
    QTRY_VERIFY(!panel->controller()->isRunning());
    QVERIFY(!panel->serveSwitch()->isChecked());
    QVERIFY(panel->requestLog()->toPlainText().contains("the model was unloaded"));
    QCOMPARE(button->text(), QString("Local server: off"));
    http::HttpClient after(url.toStdString());
    QCOMPARE(after.get("/health").status, 0L);  // nothing listens any more
  }

  void theSwitchRefusesWithoutAModelOrOnATakenPort() {
    EngineThread thread;
    EngineController* engine = thread.controller();
    ServerPanel panel(engine);
    QSignalSpy errors(panel.controller(), &ServerController::errorOccurred);
    QVERIFY(!panel.controller()->start(free_port()));
    QCOMPARE(errors.count(), 1);
    QVERIFY(errors.at(0).at(0).toString().contains("Load a model first"));
    loadTiny(engine);
    QTRY_VERIFY(panel.serveSwitch()->isEnabled());
    const int port = free_port();
    panel.portBox()->setValue(port);
    panel.serveSwitch()->setChecked(true);
    QVERIFY(panel.controller()->isRunning());
    ServerPanel second(engine);
    second.portBox()->setValue(port);
    second.serveSwitch()->setChecked(true);
    QVERIFY(!second.controller()->isRunning());
    QVERIFY(!second.serveSwitch()->isChecked());
    QVERIFY(second.urlLabel()->text().contains(QString("port %1").arg(port)));
    panel.serveSwitch()->setChecked(false);
    QVERIFY(!panel.controller()->isRunning());
    QVERIFY(panel.requestLog()->toPlainText().contains("server stopped"));
  }
};

QTEST_MAIN(TestServerPanel)
#include "test_server_panel.moc"
