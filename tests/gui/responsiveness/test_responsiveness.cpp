// Responsiveness: with the real main window on screen (Performance page: charts repainting at
// 10 Hz) and the engine generating at full speed for several long requests, a 5 ms timer on the UI
// thread never waits more than 50 ms between ticks over ~2 s. While a chat of 500 messages opens
// and is scrolled up to its first message (older messages are built in slices), and during the
// whole of a 10,000-token reply on the chat page (tiny-chat-padded: tiny-chat's tokenizer with
// 16384 positions), the UI thread is never busy with its own work for 50 ms between two ticks
// (its CPU time; the wall-clock gaps of these longer runs also count other processes).
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <time.h>

#include <algorithm>

#include "gui/app/app_session.h"
#include "gui/app/main_window.h"
#include "gui/chat/chat_list_model.h"
#include "gui/chat/conversation_view.h"
#include "gui/chat/markdown_view.h"
#include "gui/chat/message_widget.h"
#include "gui/chat/sampling_panel.h"
#include "tests/gui/support/chat_app.h"
#include "tests/gui/support/gui_test_support.h"

#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollBar>

using namespace inferdesk;
using namespace inferdesk::gui;
using inferdesk::gui::test::fixture;

class TestResponsiveness : public QObject {
  Q_OBJECT

 private slots:
  void aChatOf500MessagesOpensWithoutStalling();
  void aReplyOf10000TokensStaysResponsive();
  void uiNeverStallsWhileGenerating() {
    test::ShownMainWindow app;
    MainWindow& w = app.window;
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    EngineController* c = app.session.engine();
    test::ControllerRelay relay(c);
    QSignalSpy loaded(&relay, &test::ControllerRelay::modelLoaded);
    // A KV cache for all four requests at once (64 MiB; tiny-chat needs 1 KiB per token), so they
    // run side by side for the whole measurement.
    const QString model = fixture("tiny-chat");
    QMetaObject::invokeMethod(c, [c, model] { c->loadModel(model, "cpu", 4096, qint64(64) << 20); });
    QVERIFY(loaded.wait(30000));
    w.showPage(Page::Performance);

    int tokens = 0;
    connect(&relay, &test::ControllerRelay::tokensArrived, this,
            [&tokens](const QString&, const QString&, int n) { tokens += n; });
    const auto ids = c->renderPrompt({{"user", "Write a very long essay."}}).ids;
    QVERIFY(!ids.empty());
    constexpr int kRequests = 16;  // enough work to outlast the probe on an idle machine too
    for (int i = 0; i < kRequests; ++i) {
      SamplingParams p;
      p.temperature = 0.8f;
      p.max_tokens = 4000;  // longer than the measurement at this model's speed
      p.ignore_eos = true;
      const QString key = QString("long%1").arg(i);
      QMetaObject::invokeMethod(c, [c, ids, p, key] { c->submit(key, ids, p); });
    }
    // Wait until generation is under way, then measure.
    QTRY_VERIFY_WITH_TIMEOUT(tokens > 0, 30000);
    const int tokens_before = tokens;
    const test::LoopProbe probe = test::probeEventLoop(1000);
    const int generated = tokens - tokens_before;
    const int running = c->currentStats().running;
    qInfo("largest gap between 5 ms ticks: %lld ms over %d ticks; UI thread CPU %.0f ms; %d tokens "
          "arrived meanwhile; %d requests still running",
          probe.worst_gap_ms, probe.ticks, probe.cpu_ms, generated, running);
    QVERIFY2(generated > 100, "the engine was not generating during the measurement");
    QVERIFY2(running > 0, "the requests finished before the measurement ended");
    QVERIFY2(probe.worst_gap_ms < 50, qPrintable(QString("the UI thread stalled for %1 ms").arg(probe.worst_gap_ms)));
    QVERIFY(probe.ticks > 50);
  }
};

void TestResponsiveness::aChatOf500MessagesOpensWithoutStalling() {
  QTemporaryDir dir;
  test::ChatApp app(dir.path());
  QVERIFY(QTest::qWaitForWindowExposed(app.window.get()));
  app.window->showPage(Page::Chat);
  store::ChatStore& chats = app.ctx().chats;
  const auto chat = chats.create_chat("Five hundred messages");
  std::int64_t leaf = 0;
  {
    store::Database::Transaction tx(app.ctx().db);
    for (int i = 0; i < 250; ++i) {
      leaf = chats.add_message(chat, leaf, store::Role::User,
                               QString("Question %1: how does **this** work?").arg(i).toStdString());
      const QString reply = QString(
                                "## Answer %1\n\nIt works like this, step by step:\n\n1. first\n2. second\n\n```cpp\n"
                                "int answer_%1() { return %1; }\n```\n\n")
                                .arg(i) +
                            QString("More words. ").repeated(30);
      leaf = chats.add_message(chat, leaf, store::Role::Assistant, reply.toStdString());
    }
    tx.commit();
  }
  app.page->chatList()->reload();
  auto thread_cpu_ms = [] {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000.0 + t.tv_nsec / 1e6;
  };
  QElapsedTimer open;
  open.start();
  const double cpu_before = thread_cpu_ms();
  QVERIFY(app.page->selectChat(chat));
  const double open_cpu_ms = thread_cpu_ms() - cpu_before;
  const qint64 open_ms = open.elapsed();
  ConversationView* view = app.page->conversationView();
  QCOMPARE(app.page->conversation()->rowCount(), 500);
  QVERIFY(view->messageCount() < 500);  // only what the user sees so far
  // Scrolling to the top again and again builds the older messages a slice at a time.
  qint64 worst = 0;
  double busy = 0;
  int steps = 0;
  for (; !view->isComplete() && steps < 500; ++steps) {
    view->verticalScrollBar()->setValue(0);
    const test::LoopProbe probe = test::probeEventLoop(60);
    worst = std::max(worst, probe.worst_gap_ms);
    busy = std::max(busy, probe.worst_busy_ms);
  }
  qInfo("opening took %lld ms (%.0f ms of UI-thread CPU); scrolling up through 500 messages took %d steps: between "
        "two 5 ms ticks the UI thread was busy %.0f ms at most, the largest gap %lld ms",
        open_ms, open_cpu_ms, steps, busy, worst);
  // The UI thread's own work is bounded; wall-clock times also count other processes on the
  // machine (see aReplyOf10000TokensStaysResponsive), so they are only checked against a hang.
  QVERIFY2(open_cpu_ms < 50,
           qPrintable(QString("opening the chat kept the UI thread busy for %1 ms").arg(open_cpu_ms)));
  QVERIFY2(busy < 50, qPrintable(QString("the UI thread was busy for %1 ms at a stretch").arg(busy)));
  QVERIFY2(open_ms < 1000 && worst < 1000,
           qPrintable(QString("the UI thread waited %1 ms").arg(std::max(open_ms, worst))));
  QCOMPARE(view->messageCount(), 500);
  QVERIFY(view->messageAt(0)->body()->toPlainText().contains("Question 0"));
}

void TestResponsiveness::aReplyOf10000TokensStaysResponsive() {
  QTemporaryDir dir;
  test::ChatApp app(dir.path());
  QVERIFY(QTest::qWaitForWindowExposed(app.window.get()));
  QVERIFY(app.load("tiny-chat-padded", 12288));
  app.window->showPage(Page::Chat);
  ChatPage* page = app.page;
  QVERIFY(page->newChat() != 0);
  SamplingParams p = page->samplingPanel()->params();
  p.ignore_eos = true;
  p.max_tokens = 10000;
  page->samplingPanel()->setParams(p);
  GenerationStats stats;
  connect(page->session(), &ChatSession::replyFinished, this,
          [&stats](std::int64_t, const GenerationStats& s) { stats = s; });
  page->composer()->setPlainText("Write a very long essay with lists and code.");
  QTest::mouseClick(page->sendButton(), Qt::LeftButton);
  QTRY_VERIFY_WITH_TIMEOUT(app.content(1).size() > 0, 30000);
  qint64 worst = 0;
  double busy = 0;
  int ticks = 0, windows = 0;
  while (page->session()->isGenerating() && windows < 1200) {  // the whole reply, one probe after another
    const test::LoopProbe probe = test::probeEventLoop(500);
    worst = std::max(worst, probe.worst_gap_ms);
    busy = std::max(busy, probe.worst_busy_ms);
    ticks += probe.ticks;
    ++windows;
  }
  QVERIFY(!page->session()->isGenerating());
  qInfo("a %d-token reply (%lld characters, %.0f tok/s): between two 5 ms ticks the UI thread was busy %.0f ms at "
        "most, and the largest gap was %lld ms over %d ticks",
        stats.tokens, static_cast<long long>(app.content(1).size()), stats.tokens_per_s, busy, worst, ticks);
  QCOMPARE(stats.tokens, 10000);
  QCOMPARE(stats.finish_reason, QString("length"));
  // The UI thread's own work between ticks stays small. The wall-clock gap also counts the time
  // the engine thread and other processes take the cores (a shared 2-core machine under load
  // showed 200 ms while the UI thread's own work stayed under 20 ms), so it is only checked
  // against a hang.
  QVERIFY2(busy < 50, qPrintable(QString("the UI thread was busy for %1 ms at a stretch").arg(busy)));
  QVERIFY2(worst < 1000, qPrintable(QString("the UI thread waited %1 ms between ticks").arg(worst)));
  QVERIFY(ticks > 100);
}

QTEST_MAIN(TestResponsiveness)
#include "test_responsiveness.moc"
