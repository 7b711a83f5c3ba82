// ServerPanel: the "Serve the loaded model on localhost:PORT" switch, the server's URL, the number
// of connected clients and a request log. install_server_panel() docks it at the bottom of the
// main window (hidden until asked for) with a status-bar button that shows and hides it.
#pragma once

#include <QWidget>

class QCheckBox;
class QDockWidget;
class QLabel;
class QMainWindow;
class QPlainTextEdit;
class QSpinBox;

namespace inferdesk::gui {

class EngineController;
class ServerController;

class ServerPanel : public QWidget {
  Q_OBJECT

 public:
  explicit ServerPanel(EngineController* engine, QWidget* parent = nullptr);

  ServerController* controller() const { return controller_; }
  QCheckBox* serveSwitch() const { return switch_; }
  QSpinBox* portBox() const { return port_; }
  QLabel* urlLabel() const { return url_; }
  QLabel* clientsLabel() const { return clients_; }
  QPlainTextEdit* requestLog() const { return log_; }

  static constexpr int kDefaultPort = 8000;
  static constexpr int kMaxLogLines = 1000;

 private:
  void setModelLoaded(bool loaded);
  void appendLog(const QString& line);

  ServerController* controller_;
  QCheckBox* switch_;
  QSpinBox* port_;
  QLabel* url_;
  QLabel* clients_;
  QPlainTextEdit* log_;
};

// The panel in a dock widget of `window` (hidden at first) and a status-bar button for it.
QDockWidget* install_server_panel(QMainWindow& window, EngineController* engine);

}  // namespace inferdesk::gui
