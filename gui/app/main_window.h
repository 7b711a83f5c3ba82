// The main window: a sidebar with the pages (Chat, Models, Performance, Dashboard) over a stacked widget, a
// menu bar listing every command with its shortcut (app_menu.h), and a status bar with the loaded
// model and the latest engine message. The chat page comes from gui/chat (ChatPage) when that
// library is built; otherwise a note stands in for it. At start it applies the saved theme, fits
// the saved geometry to the screen, and offers (or loads) the model loaded last time.
#pragma once

#include <QMainWindow>

#include "gui/app/app_context.h"
#include "gui/app/app_menu.h"

class QAction;
class QListWidget;
class QStackedWidget;

namespace inferdesk::gui {

class DashboardPage;
class ElidedLabel;
class ModelsPage;
class PerfPage;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  // Sets ctx.show_page to switch this window's pages (cleared again by the destructor).
  explicit MainWindow(AppContext& ctx, QWidget* parent = nullptr);
  ~MainWindow() override;

  QWidget* chatPage() const { return chat_; }
  ModelsPage* modelsPage() const { return models_; }
  PerfPage* perfPage() const { return perf_; }
  DashboardPage* dashboardPage() const { return dashboard_; }
  Page currentPage() const;
  QListWidget* sidebar() const { return sidebar_; }
  ElidedLabel* modelStatus() const { return model_status_; }
  const MenuCommands& commands() const { return commands_; }

 public slots:
  void showPage(inferdesk::gui::Page page);
  void showSettings();
  void showShortcuts();

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void buildCommands();
  void connectEngine();
  void restoreGeometryFromSettings();
  void saveGeometryToSettings();
  void offerLastModel();

  AppContext& ctx_;
  QListWidget* sidebar_ = nullptr;
  QStackedWidget* stack_ = nullptr;
  QWidget* chat_ = nullptr;
  ModelsPage* models_ = nullptr;
  PerfPage* perf_ = nullptr;
  DashboardPage* dashboard_ = nullptr;
  ElidedLabel* model_status_ = nullptr;
  MenuCommands commands_;
};

}  // namespace inferdesk::gui
