#include "gui/app/main_window.h"

#include <QApplication>
#include <QCloseEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QStackedWidget>
#include <QStatusBar>

#include <exception>

#include "core/store/store.h"
#include "gui/engine/engine_controller.h"
#include "gui/models/model_facts.h"
#include "gui/models/models_page.h"
#include "gui/perf/perf_page.h"
#include "gui/server/server_panel.h"

#ifdef INFERDESK_HAVE_CHAT_PAGE
#include "gui/chat/chat_page.h"
#endif

namespace inferdesk::gui {

namespace {

constexpr int kMessageMs = 15000;
constexpr const char* kGeometryKey = "window/geometry";

QWidget* make_chat_page(AppContext& ctx) {
#ifdef INFERDESK_HAVE_CHAT_PAGE
  return new ChatPage(ctx, nullptr);
#else
  (void)ctx;
  auto* note = new QLabel(QObject::tr("The chat page is not part of this build."));
  note->setAlignment(Qt::AlignCenter);
  return note;
#endif
}

}  // namespace

MainWindow::MainWindow(AppContext& ctx, QWidget* parent) : QMainWindow(parent), ctx_(ctx) {
  setWindowTitle(tr("InferDesk"));
  ctx_.show_page = [this](Page p) { showPage(p); };

  auto* central = new QWidget();
  auto* row = new QHBoxLayout(central);
  row->setContentsMargins(0, 0, 0, 0);
  row->setSpacing(0);
  sidebar_ = new QListWidget();
  sidebar_->setObjectName("sidebar");
  sidebar_->setFixedWidth(150);
  sidebar_->setFrameShape(QFrame::NoFrame);
  sidebar_->setStyleSheet(
      "QListWidget#sidebar { background: palette(window); padding-top: 8px; }"
      "QListWidget#sidebar::item { height: 38px; padding-left: 14px; border: none; }"
      "QListWidget#sidebar::item:selected { background: palette(highlight); color: palette(highlighted-text); }");
  QFont item_font = sidebar_->font();
  item_font.setPointSizeF(item_font.pointSizeF() * 1.15);
  for (const QString& name : {tr("Chat"), tr("Models"), tr("Performance")})
    (new QListWidgetItem(name, sidebar_))->setFont(item_font);
  stack_ = new QStackedWidget();
  chat_ = make_chat_page(ctx_);
  models_ = new ModelsPage(ctx_);
  perf_ = new PerfPage(ctx_);
  stack_->addWidget(chat_);
  stack_->addWidget(models_);
  stack_->addWidget(perf_);
  row->addWidget(sidebar_);
  row->addWidget(stack_, 1);
  setCentralWidget(central);
  connect(sidebar_, &QListWidget::currentRowChanged, stack_, &QStackedWidget::setCurrentIndex);

  model_status_ = new QLabel(tr("No model loaded"));
  statusBar()->addPermanentWidget(model_status_);
  if (ctx_.db.read_only())
    statusBar()->showMessage(tr("Read-only: %1").arg(QString::fromStdString(ctx_.db.read_only_reason())));
  if (EngineController* engine = ctx_.engine) {
    connect(engine, &EngineController::errorOccurred, this,
            [this](const QString& m) { statusBar()->showMessage(m, kMessageMs); });
    connect(engine, &EngineController::modelLoaded, this, [this](const ModelSummary& s) {
      model_status_->setText(tr("%1 · %2 · context %3 · %4")
                                 .arg(s.name, s.backend == "cuda" ? "CUDA" : "CPU")
                                 .arg(s.context_length)
                                 .arg(format_bytes(s.weight_bytes)));
    });
    connect(engine, &EngineController::loadStarted, this,
            [this](const QString& path) { model_status_->setText(tr("Loading %1…").arg(path)); });
    connect(engine, &EngineController::loadFailed, this,
            [this] { model_status_->setText(tr("No model loaded")); });
    connect(engine, &EngineController::modelUnloaded, this,
            [this] { model_status_->setText(tr("No model loaded")); });
    install_server_panel(*this, engine);  // "Serve the loaded model on localhost:PORT"
  }
  resize(1200, 800);
  restoreGeometryFromSettings();
  // Start where the user can act: Models when nothing is registered yet, else Chat.
  bool have_models = models_->manager()->table()->rowCount() > 0;
  showPage(have_models ? Page::Chat : Page::Models);
}

MainWindow::~MainWindow() { ctx_.show_page = nullptr; }

Page MainWindow::currentPage() const { return static_cast<Page>(stack_->currentIndex()); }

void MainWindow::showPage(Page page) {
  sidebar_->setCurrentRow(static_cast<int>(page));
  stack_->setCurrentIndex(static_cast<int>(page));
}

void MainWindow::closeEvent(QCloseEvent* event) {
  saveGeometryToSettings();
  QMainWindow::closeEvent(event);
}

void MainWindow::restoreGeometryFromSettings() {
  try {
    if (const auto g = ctx_.settings.get(kGeometryKey))
      restoreGeometry(QByteArray::fromBase64(QByteArray::fromStdString(*g)));
  } catch (const std::exception&) {
    // An unreadable setting only costs the window its old size.
  }
}

void MainWindow::saveGeometryToSettings() {
  if (ctx_.db.read_only()) return;
  try {
    ctx_.settings.set(kGeometryKey, saveGeometry().toBase64().toStdString());
  } catch (const std::exception& e) {
    statusBar()->showMessage(tr("could not save the window size: %1").arg(e.what()));
  }
}

}  // namespace inferdesk::gui
