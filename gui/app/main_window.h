// The main window: a sidebar with the pages (Chat, Models, Performance) over a stacked widget,
// and a status bar with the loaded model and the latest engine message. The chat page comes from
// gui/chat (ChatPage) when that library is built; otherwise a note stands in for it.
#pragma once

#include <QMainWindow>

#include "gui/app/app_context.h"

class QLabel;
class QListWidget;
class QStackedWidget;

namespace inferdesk::gui {

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
  Page currentPage() const;
  QListWidget* sidebar() const { return sidebar_; }

 public slots:
  void showPage(inferdesk::gui::Page page);

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void restoreGeometryFromSettings();
  void saveGeometryToSettings();

  AppContext& ctx_;
  QListWidget* sidebar_ = nullptr;
  QStackedWidget* stack_ = nullptr;
  QWidget* chat_ = nullptr;
  ModelsPage* models_ = nullptr;
  PerfPage* perf_ = nullptr;
  QLabel* model_status_ = nullptr;
};

}  // namespace inferdesk::gui
