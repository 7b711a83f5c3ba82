// ServerController: the desktop app's local OpenAI-compatible server (core/server) over the model
// the EngineController has loaded. Lives on the GUI thread; the server runs on its own threads
// and reaches the engine directly (a weak handle: unloading the model is never held up by it).
// The server stops by itself when the model is unloaded or replaced. Request log lines and the
// number of connected clients arrive as signals on the GUI thread.
#pragma once

#include <QObject>
#include <QString>

#include <memory>

class QTimer;

namespace inferdesk::server {
class Server;
}

namespace inferdesk::gui {

class EngineController;

class ServerController : public QObject {
  Q_OBJECT

 public:
  explicit ServerController(EngineController* engine, QObject* parent = nullptr);
  ~ServerController() override;  // stops the server (in-flight requests are cancelled)

  bool isRunning() const { return server_ != nullptr; }
  QString url() const;  // "http://127.0.0.1:PORT" while running, else ""
  int connectedClients() const;

  static constexpr int kClientsPollMs = 250;

 public slots:
  // Serves the loaded model on 127.0.0.1:port. Emits started, or errorOccurred with the reason
  // (no model loaded, the port is taken, ...). Returns whether it runs.
  bool start(int port);
  void stop(const QString& reason = tr("stopped"));

 signals:
  void started(const QString& url);
  void stopped(const QString& reason);
  void requestLogged(const QString& line, int status);
  void clientsChanged(int connected);
  void errorOccurred(const QString& message);

 private:
  EngineController* engine_;
  std::unique_ptr<server::Server> server_;
  QTimer* poll_ = nullptr;
  int last_clients_ = -1;
};

}  // namespace inferdesk::gui
