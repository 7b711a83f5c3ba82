#include "gui/server/server_controller.h"

#include <QDateTime>
#include <QMetaObject>
#include <QPointer>
#include <QTimer>

#include <exception>

#include "core/server/server.h"
#include "gui/engine/engine_controller.h"

namespace inferdesk::gui {

namespace {

QString log_line(const server::RequestLogEntry& e) {
  QString line = QDateTime::currentDateTime().toString("HH:mm:ss") + "  " + QString::fromStdString(e.method) + " " +
                 QString::fromStdString(e.path) + "  " + QString::number(e.status);
  if (e.stream) line += "  stream";
  if (e.prompt_tokens || e.completion_tokens)
    line += QString("  %1 + %2 tokens").arg(e.prompt_tokens).arg(e.completion_tokens);
  if (!e.finish_reason.empty()) line += "  " + QString::fromStdString(e.finish_reason);
  line += QString("  %1 s  %2").arg(e.duration_s, 0, 'f', 3).arg(QString::fromStdString(e.remote));
  return line;
}

}  // namespace

ServerController::ServerController(EngineController* engine, QObject* parent) : QObject(parent), engine_(engine) {
  poll_ = new QTimer(this);
  poll_->setInterval(kClientsPollMs);
  connect(poll_, &QTimer::timeout, this, [this] {
    const int n = connectedClients();
    if (n != last_clients_) emit clientsChanged(last_clients_ = n);
  });
  // The model goes away: so does the server (its requests were cancelled with the engine).
  connect(engine_, &EngineController::modelUnloaded, this, [this] { stop(tr("the model was unloaded")); });
  connect(engine_, &EngineController::loadStarted, this, [this] { stop(tr("another model is loading")); });
}

ServerController::~ServerController() {
  if (server_) server_->shutdown(std::chrono::milliseconds(0));
}

QString ServerController::url() const { return server_ ? QString::fromStdString(server_->url()) : QString(); }

int ServerController::connectedClients() const {
  return server_ ? static_cast<int>(server_->stats().open_connections) : 0;
}

bool ServerController::start(int port) {
  if (server_) return true;
  const auto summary = engine_->loadedModel();
  std::shared_ptr<Engine> engine = engine_->engineHandle().lock();
  if (!summary || !engine) {
    emit errorOccurred(tr("Load a model first: the server serves the loaded model."));
    return false;
  }
  try {
    server::ServerOptions o;
    o.host = "127.0.0.1";  // this machine only
    o.port = static_cast<uint16_t>(port);
    // Log lines go to the GUI thread; queued calls to a destroyed controller are dropped by Qt.
    QPointer<ServerController> self(this);
    o.on_request = [self](const server::RequestLogEntry& e) {
      const QString line = log_line(e);
      const int status = e.status;
      QMetaObject::invokeMethod(
          self,
          [self, line, status] {
            if (self) emit self->requestLogged(line, status);
          },
          Qt::QueuedConnection);
    };
    auto served = server::make_served_model(engine, summary->path.toStdString(), {summary->name.toStdString()});
    engine.reset();
    server_ = std::make_unique<server::Server>(std::move(served), std::move(o));
    server_->start();
  } catch (const std::exception& e) {
    server_.reset();
    emit errorOccurred(tr("Could not start the server on port %1: %2").arg(port).arg(e.what()));
    return false;
  }
  poll_->start();
  emit started(url());
  return true;
}

void ServerController::stop(const QString& reason) {
  if (!server_) return;
  poll_->stop();
  server_->shutdown(std::chrono::milliseconds(0));
  server_.reset();
  last_clients_ = -1;
  emit clientsChanged(0);
  emit stopped(reason);
}

}  // namespace inferdesk::gui
