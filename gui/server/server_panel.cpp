#include "gui/server/server_panel.h"

#include <QCheckBox>
#include <QDockWidget>
#include <QHBoxLayout>
#include <QLabel>
#include <QMainWindow>
#include <QPlainTextEdit>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStatusBar>
#include <QToolButton>
#include <QVBoxLayout>

#include "gui/engine/engine_controller.h"
#include "gui/server/server_controller.h"

namespace inferdesk::gui {

ServerPanel::ServerPanel(EngineController* engine, QWidget* parent)
    : QWidget(parent), controller_(new ServerController(engine, this)) {
  switch_ = new QCheckBox(tr("Serve the loaded model on localhost:"));
  switch_->setObjectName("serveSwitch");
  port_ = new QSpinBox();
  port_->setObjectName("serverPort");
  port_->setRange(1, 65535);
  port_->setValue(kDefaultPort);
  url_ = new QLabel();
  url_->setObjectName("serverUrl");
  url_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  clients_ = new QLabel();
  clients_->setObjectName("serverClients");
  log_ = new QPlainTextEdit();
  log_->setObjectName("serverLog");
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(kMaxLogLines);
  log_->setPlaceholderText(tr("Requests to the server appear here (OpenAI API: /v1/chat/completions, "
                              "/v1/completions, /v1/models)."));
  auto* row = new QHBoxLayout();
  row->addWidget(switch_);
  row->addWidget(port_);
  row->addSpacing(16);
  row->addWidget(url_, 1);
  row->addWidget(clients_);
  auto* column = new QVBoxLayout(this);
  column->addLayout(row);
  column->addWidget(log_, 1);

  connect(switch_, &QCheckBox::toggled, this, [this](bool on) {
    if (on && !controller_->start(port_->value())) {
      const QSignalBlocker block(switch_);
      switch_->setChecked(false);
    }
    if (!on) controller_->stop();
  });
  connect(controller_, &ServerController::started, this, [this](const QString& url) {
    url_->setText(tr("Serving at %1/v1").arg(url));
    port_->setEnabled(false);
    appendLog(tr("--- serving at %1/v1").arg(url));
  });
  connect(controller_, &ServerController::stopped, this, [this](const QString& reason) {
    const QSignalBlocker block(switch_);
    switch_->setChecked(false);
    port_->setEnabled(true);
    url_->setText(tr("Off"));
    appendLog(tr("--- server stopped: %1").arg(reason));
  });
  connect(controller_, &ServerController::errorOccurred, this, [this](const QString& m) {
    url_->setText(m);
    appendLog("--- " + m);
  });
  connect(controller_, &ServerController::requestLogged, this, [this](const QString& line, int) { appendLog(line); });
  connect(controller_, &ServerController::clientsChanged, this,
          [this](int n) { clients_->setText(tr("Connected clients: %1").arg(n)); });
  connect(engine, &EngineController::modelLoaded, this, [this] { setModelLoaded(true); });
  connect(engine, &EngineController::modelUnloaded, this, [this] { setModelLoaded(false); });
  clients_->setText(tr("Connected clients: 0"));
  url_->setText(tr("Off"));
  setModelLoaded(engine->isLoaded());
}

void ServerPanel::setModelLoaded(bool loaded) {
  switch_->setEnabled(loaded || controller_->isRunning());
  switch_->setToolTip(loaded ? QString() : tr("Load a model on the Models page first."));
}

void ServerPanel::appendLog(const QString& line) { log_->appendPlainText(line); }

QDockWidget* install_server_panel(QMainWindow& window, EngineController* engine) {
  auto* dock = new QDockWidget(QObject::tr("Local server"), &window);
  dock->setObjectName("serverDock");
  auto* panel = new ServerPanel(engine, dock);
  dock->setWidget(panel);
  window.addDockWidget(Qt::BottomDockWidgetArea, dock);
  dock->hide();
  auto* button = new QToolButton();
  button->setObjectName("serverButton");
  button->setAutoRaise(true);
  button->setDefaultAction(dock->toggleViewAction());
  dock->toggleViewAction()->setText(QObject::tr("Local server: off"));
  QObject::connect(panel->controller(), &ServerController::started, button,
                   [dock] { dock->toggleViewAction()->setText(QObject::tr("Local server: on")); });
  QObject::connect(panel->controller(), &ServerController::stopped, button,
                   [dock] { dock->toggleViewAction()->setText(QObject::tr("Local server: off")); });
  window.statusBar()->addWidget(button);
  return dock;
}

}  // namespace inferdesk::gui
