// Helpers shared by the GUI tests: fixture paths, a temporary data folder with the stores over it,
// a relay that brings a controller's cross-thread signals onto the test's thread (QSignalSpy is
// not thread-safe), and screenshots under the build tree.
#pragma once

#include <sys/resource.h>
#include <time.h>

#include <QDir>
#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QWidget>

#include <algorithm>
#include <memory>

#include "core/store/store.h"
#include "gui/app/app_context.h"
#include "gui/app/app_session.h"
#include "gui/app/main_window.h"
#include "gui/engine/engine_controller.h"

namespace inferdesk::gui::test {

inline QString fixture(const QString& name) {
  return QDir::cleanPath(QString(INFERDESK_SOURCE_DIR) + "/tests/golden/models/" + name);
}

// A temporary data folder with a database and the stores: what AppSession holds, minus the
// engine thread (tests pick their own controller).
struct TempStores {
  QTemporaryDir dir;
  std::unique_ptr<store::Database> db;
  std::unique_ptr<store::ChatStore> chats;
  std::unique_ptr<store::ModelRegistry> models;
  std::unique_ptr<store::Settings> settings;
  std::unique_ptr<AppContext> ctx;

  explicit TempStores(EngineController* engine) {
    db = std::make_unique<store::Database>((dir.path() + "/inferdesk.db").toStdString());
    chats = std::make_unique<store::ChatStore>(*db);
    models = std::make_unique<store::ModelRegistry>(*db);
    settings = std::make_unique<store::Settings>(*db);
    ctx.reset(new AppContext{*db, *chats, *models, *settings, engine, dir.path(), {}});
  }
};

// The application as main.cpp builds it (session over a fresh data folder, main window), shown
// at a size that suits screenshots. Wait for QTest::qWaitForWindowExposed(&app.window) before
// grabbing it.
struct ShownMainWindow {
  QTemporaryDir dir;
  AppSession session{dir.path()};
  MainWindow window{session.context()};
  ShownMainWindow() {
    window.resize(1280, 820);
    window.show();
  }
};

// Re-emits an EngineController's signals on the thread this object lives on.
class ControllerRelay : public QObject {
  Q_OBJECT

 public:
  explicit ControllerRelay(EngineController* c) {
    connect(c, &EngineController::loadStarted, this, &ControllerRelay::loadStarted);
    connect(c, &EngineController::loadProgress, this, &ControllerRelay::loadProgress);
    connect(c, &EngineController::modelLoaded, this, &ControllerRelay::modelLoaded);
    connect(c, &EngineController::loadFailed, this, &ControllerRelay::loadFailed);
    connect(c, &EngineController::modelUnloaded, this, &ControllerRelay::modelUnloaded);
    connect(c, &EngineController::tokensArrived, this, &ControllerRelay::tokensArrived);
    connect(c, &EngineController::finished, this, &ControllerRelay::finished);
    connect(c, &EngineController::errorOccurred, this, &ControllerRelay::errorOccurred);
    connect(c, &EngineController::statsUpdated, this, &ControllerRelay::statsUpdated);
  }

 signals:
  void loadStarted(const QString& path);
  void loadProgress(qint64 done, qint64 total);
  void modelLoaded(const inferdesk::gui::ModelSummary& model);
  void loadFailed(const QString& message, bool cancelled);
  void modelUnloaded();
  void tokensArrived(const QString& key, const QString& text, int numTokens);
  void finished(const QString& key, const inferdesk::gui::GenerationStats& stats);
  void errorOccurred(const QString& message);
  void statsUpdated(const inferdesk::EngineStats& stats);
};

// How responsive this thread's event loop was while probeEventLoop ran it.
struct LoopProbe {
  qint64 worst_gap_ms = 0;  // the largest gap between two ticks of a 5 ms timer
  int ticks = 0;
  double cpu_ms = 0;  // CPU time this thread used meanwhile
  // The most CPU time the thread used between two ticks: the longest it was busy with its own
  // work, whatever other processes took from it (a loaded machine lengthens the gaps above).
  double worst_busy_ms = 0;
};

// Runs the event loop for `duration_ms` with a precise 5 ms timer and measures the gaps between
// its ticks: a gap much longer than 5 ms means the thread was busy (or starved) that long.
inline LoopProbe probeEventLoop(int duration_ms) {
  LoopProbe r;
  QTimer tick;
  tick.setTimerType(Qt::PreciseTimer);
  tick.setInterval(5);
  QElapsedTimer clock;
  qint64 last = 0;
  auto cpu_ms = [] {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000.0 + t.tv_nsec / 1e6;
  };
  double cpu_last = cpu_ms();
  const double cpu_before = cpu_last;
  QObject::connect(&tick, &QTimer::timeout, [&] {
    const qint64 now = clock.elapsed();
    const double cpu = cpu_ms();
    r.worst_gap_ms = std::max(r.worst_gap_ms, now - last);
    r.worst_busy_ms = std::max(r.worst_busy_ms, cpu - cpu_last);
    last = now;
    cpu_last = cpu;
    ++r.ticks;
  });
  clock.start();
  tick.start();
  QTest::qWait(duration_ms);
  tick.stop();
  r.worst_gap_ms = std::max(r.worst_gap_ms, clock.elapsed() - last);  // the tail counts too
  r.worst_busy_ms = std::max(r.worst_busy_ms, cpu_ms() - cpu_last);
  r.cpu_ms = cpu_ms() - cpu_before;
  return r;
}

// Saves widget->grab() as INFERDESK_SCREENSHOT_DIR/<name>.png; returns the path ("" on failure).
inline QString saveScreenshot(QWidget* widget, const QString& name) {
  QDir().mkpath(INFERDESK_SCREENSHOT_DIR);
  const QString path = QString(INFERDESK_SCREENSHOT_DIR) + "/" + name + ".png";
  return widget->grab().save(path) ? path : QString();
}

}  // namespace inferdesk::gui::test
