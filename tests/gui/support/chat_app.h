// The application as main.cpp builds it (a session over a data folder, the main window) with
// its chat page at hand and tiny-chat loaded through the model manager, for the desktop tests.
#pragma once

#include <QSignalSpy>
#include <QTest>

#include <memory>

#include "gui/app/app_session.h"
#include "gui/app/main_window.h"
#include "gui/chat/chat_page.h"
#include "gui/chat/chat_session.h"
#include "gui/chat/conversation_model.h"
#include "gui/chat/sampling_panel.h"
#include "gui/engine/engine_controller.h"
#include "gui/models/model_manager.h"
#include "gui/models/models_page.h"
#include "tests/gui/support/gui_test_support.h"

namespace inferdesk::gui::test {

// Replies of exactly n tokens (EOS ignored) from the page's sampling panel on.
inline void set_max_tokens(ChatPage* page, int n) {
  SamplingParams p = page->samplingPanel()->params();
  p.ignore_eos = true;
  p.max_tokens = n;
  page->samplingPanel()->setParams(p);
}

struct ChatApp {
  std::unique_ptr<AppSession> session;
  std::unique_ptr<MainWindow> window;
  ChatPage* page = nullptr;

  explicit ChatApp(const QString& dir, QSize size = {1200, 800}) {
    session = std::make_unique<AppSession>(dir);
    window = std::make_unique<MainWindow>(session->context());
    window->resize(size);
    window->show();
    page = qobject_cast<ChatPage*>(window->chatPage());
  }
  ~ChatApp() {
    window.reset();
    session.reset();
  }
  AppContext& ctx() { return session->context(); }
  EngineController* engine() { return session->engine(); }

  // Adds a fixture through the model manager and loads it on the CPU; true once loaded.
  bool load(const QString& name = "tiny-chat", int context = 4096) {
    ModelManager* manager = window->modelsPage()->manager();
    const AddModelResult added = manager->addFolder(fixture(name));
    if (!added.ok) return false;
    QSignalSpy loaded(engine(), &EngineController::modelLoaded);
    if (!manager->load(added.id, "cpu", context)) return false;
    if (!loaded.wait(60000)) return false;
    QTest::qWait(50);  // the pages' own modelLoaded slots
    return engine()->isLoaded();
  }
  QString content(int row) const {
    return page->conversation()->data(page->conversation()->index(row), ConversationModel::ContentRole).toString();
  }
  // Waits until no reply streams in the shown chat and nothing waits in its queue.
  bool settle(int ms = 60000) {
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < ms) {
      if (!page->session()->isGenerating() && page->session()->queued(page->currentChatId()).isEmpty()) return true;
      QTest::qWait(20);
    }
    return false;
  }
};

}  // namespace inferdesk::gui::test
