#include "gui/app/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QPainter>
#include <QScreen>
#include <QStackedWidget>
#include <QStatusBar>
#include <QStyledItemDelegate>

#include <exception>

#include "core/store/store.h"
#include "gui/app/app_icon.h"
#include "gui/app/elided_label.h"
#include "gui/app/settings_dialog.h"
#include "gui/app/theme.h"
#include "gui/app/window_geometry.h"
#include "gui/dashboard/dashboard_page.h"
#include "gui/engine/engine_controller.h"
#include "gui/hub/hub_feature.h"
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

// Sidebar rows: 38 px high, the name 14 px in, the selection across the whole row.
class SidebarDelegate : public QStyledItemDelegate {
 public:
  using QStyledItemDelegate::QStyledItemDelegate;
  QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override {
    return {QStyledItemDelegate::sizeHint(option, index).width() + 14, 38};
  }
  void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override {
    QStyleOptionViewItem opt = option;
    initStyleOption(&opt, index);
    const QWidget* w = opt.widget;
    QStyle* style = w ? w->style() : QApplication::style();
    style->drawPrimitive(QStyle::PE_PanelItemViewItem, &opt, painter, w);
    painter->save();
    painter->setFont(opt.font);
    painter->setPen(opt.palette.color(opt.state & QStyle::State_Selected ? QPalette::HighlightedText : QPalette::Text));
    painter->drawText(opt.rect.adjusted(14, 0, 0, 0), Qt::AlignLeft | Qt::AlignVCenter, opt.text);
    painter->restore();
  }
};

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
  setWindowIcon(appIcon());
  if (QApplication::windowIcon().isNull()) QApplication::setWindowIcon(windowIcon());  // dialogs too
  if (const ThemeChoice theme = savedTheme(ctx_.settings); theme != ThemeChoice::System)
    if (auto* app = qobject_cast<QApplication*>(QCoreApplication::instance())) applyTheme(*app, theme);
  ctx_.show_page = [this](Page p) { showPage(p); };

  auto* central = new QWidget();
  auto* row = new QHBoxLayout(central);
  row->setContentsMargins(0, 0, 0, 0);
  row->setSpacing(0);
  sidebar_ = new QListWidget();
  sidebar_->setObjectName("sidebar");
  sidebar_->setFixedWidth(130);
  sidebar_->setFrameShape(QFrame::NoFrame);
  // No style sheet: it would freeze the sidebar's palette, and a theme switch would not reach it.
  sidebar_->viewport()->setBackgroundRole(QPalette::Window);
  sidebar_->setSpacing(0);
  sidebar_->setItemDelegate(new SidebarDelegate(sidebar_));
  QFont item_font = sidebar_->font();
  item_font.setPointSizeF(item_font.pointSizeF() * 1.15);
  for (const QString& name : {tr("Chat"), tr("Models"), tr("Performance"), tr("Dashboard")})
    (new QListWidgetItem(name, sidebar_))->setFont(item_font);
  stack_ = new QStackedWidget();
  chat_ = make_chat_page(ctx_);
  models_ = new ModelsPage(ctx_);
  perf_ = new PerfPage(ctx_);
  stack_->addWidget(chat_);
  stack_->addWidget(models_);
  stack_->addWidget(perf_);
  dashboard_ = new DashboardPage(ctx_);
  stack_->addWidget(dashboard_);
  connect(dashboard_, &DashboardPage::errorMessage, this,
          [this](const QString& m) { statusBar()->showMessage(m, kMessageMs); });
  row->addWidget(sidebar_);
  row->addWidget(stack_, 1);
  setCentralWidget(central);
  connect(sidebar_, &QListWidget::currentRowChanged, stack_, &QStackedWidget::setCurrentIndex);

  model_status_ = new ElidedLabel(tr("No model loaded"));
  model_status_->setObjectName("modelStatus");
  statusBar()->addPermanentWidget(model_status_);
  model_status_->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
  if (ctx_.db.read_only())
    statusBar()->showMessage(tr("Read-only: %1").arg(QString::fromStdString(ctx_.db.read_only_reason())));
  connectEngine();
  buildCommands();
  // "Download a model…", the downloads panel and the token (gui/hub).
  auto* hub = new HubFeature(*this, ctx_, models_, default_hub_feature_options());
  commands_.downloadModel = hub->downloadModelAction();
  commands_.downloads = hub->downloadsAction();
  commands_.hubToken = hub->tokenAction();
  buildMenuBar(menuBar(), commands_);
  if (ctx_.engine) install_server_panel(*this, ctx_.engine);  // "Serve the loaded model on localhost:PORT"
  resize(1200, 800);
  restoreGeometryFromSettings();
  // Start where the user can act: Models when nothing is registered yet, else Chat.
  bool have_models = models_->manager()->table()->rowCount() > 0;
  showPage(have_models ? Page::Chat : Page::Models);
  offerLastModel();
}

MainWindow::~MainWindow() { ctx_.show_page = nullptr; }

void MainWindow::connectEngine() {
  EngineController* engine = ctx_.engine;
  if (!engine) return;
  connect(engine, &EngineController::errorOccurred, this,
          [this](const QString& m) { statusBar()->showMessage(m, kMessageMs); });
  connect(engine, &EngineController::modelLoaded, this, [this](const ModelSummary& s) {
    model_status_->setFullText(tr("%1 · %2 · context %3 · %4")
                                   .arg(s.name, s.backend == "cuda" ? "CUDA" : "CPU")
                                   .arg(s.context_length)
                                   .arg(format_bytes(s.weight_bytes)));
    model_status_->setDetailToolTip(s.path);
  });
  connect(engine, &EngineController::loadStarted, this,
          [this](const QString& path) { model_status_->setFullText(tr("Loading %1…").arg(path)); });
  connect(engine, &EngineController::loadFailed, this, [this] { model_status_->setFullText(tr("No model loaded")); });
  connect(engine, &EngineController::modelUnloaded, this, [this] {
    model_status_->setFullText(tr("No model loaded"));
    model_status_->setDetailToolTip(QString());
  });
  connect(models_->manager(), &ModelManager::statusMessage, this,
          [this](const QString& m) { statusBar()->showMessage(m, kMessageMs); });
}

void MainWindow::buildCommands() {
  auto make = [this](const QString& text, const QKeySequence& key) {
    auto* a = new QAction(text, this);
    a->setShortcut(key);
    addAction(a);
    return a;
  };
  commands_.settings = make(tr("&Settings\u2026"), QKeySequence(Qt::CTRL | Qt::Key_Comma));
  commands_.settings->setMenuRole(QAction::PreferencesRole);
  commands_.quit = make(tr("&Quit"), QKeySequence(Qt::CTRL | Qt::Key_Q));
  commands_.quit->setMenuRole(QAction::QuitRole);
  const QStringList names{tr("&Chat"), tr("&Models"), tr("&Performance"), tr("&Dashboard")};
  for (int i = 0; i < names.size(); ++i) {
    QAction* a = make(names[i], QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + i)));
    connect(a, &QAction::triggered, this, [this, i] { showPage(static_cast<Page>(i)); });
    commands_.pages << a;
  }
  commands_.shortcuts = make(tr("&Keyboard shortcuts"), QKeySequence(Qt::Key_F1));
  commands_.about = make(tr("&About InferDesk"), QKeySequence());
  connect(commands_.settings, &QAction::triggered, this, &MainWindow::showSettings);
  connect(commands_.quit, &QAction::triggered, this, &QWidget::close);
  connect(commands_.shortcuts, &QAction::triggered, this, &MainWindow::showShortcuts);
  connect(commands_.about, &QAction::triggered, this, [this] {
    QMessageBox::about(this, tr("About InferDesk"),
                       tr("<b>InferDesk %1</b><p>Chat with open models on your own GPU or CPU.</p>")
                           .arg(QApplication::applicationVersion().toHtmlEscaped()));
  });
#ifdef INFERDESK_HAVE_CHAT_PAGE
  if (auto* chat = qobject_cast<ChatPage*>(chat_)) {
    const ChatPage::Actions& a = chat->actions();
    commands_.newChat = a.newChat;
    commands_.importChat = a.importChat;
    commands_.exportChat = a.exportChat;
    commands_.find = a.find;
    commands_.focusComposer = a.focusComposer;
    commands_.deleteChat = a.deleteChat;
    commands_.stop = a.stop;
    commands_.regenerate = a.regenerate;
  }
#endif
}

Page MainWindow::currentPage() const { return static_cast<Page>(stack_->currentIndex()); }

void MainWindow::showPage(Page page) {
  sidebar_->setCurrentRow(static_cast<int>(page));
  stack_->setCurrentIndex(static_cast<int>(page));
}

void MainWindow::showSettings() {
  auto* dialog = findChild<SettingsDialog*>();
  if (!dialog) {
    dialog = new SettingsDialog(ctx_, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &SettingsDialog::errorOccurred, this,
            [this](const QString& m) { statusBar()->showMessage(m, kMessageMs); });
  }
  dialog->show();
  dialog->raise();
}

void MainWindow::showShortcuts() {
  auto* box = new QMessageBox(QMessageBox::Information, tr("Keyboard shortcuts"), shortcutsTable(commands_),
                              QMessageBox::Close, this);
  box->setObjectName("shortcutsDialog");
  box->setTextFormat(Qt::RichText);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

void MainWindow::offerLastModel() {
  LastModelMemory& memory = models_->manager()->lastModel();
  const auto last = memory.last();
  const StartupModel policy = memory.policy();
  if (!last || policy == StartupModel::Nothing || !ctx_.engine || ctx_.engine->isLoaded()) return;
  if (!models_->manager()->table()->find(last->id)) return;  // removed since
  ModelManager* manager = models_->manager();
  const LastModel m = *last;
  auto load = [manager, m] { manager->load(m.id, m.backend, m.context); };
  if (policy == StartupModel::Load) {
    load();
    return;
  }
#ifdef INFERDESK_HAVE_CHAT_PAGE
  if (auto* chat = qobject_cast<ChatPage*>(chat_))
    chat->offer(tr("%1 was loaded when InferDesk last closed. Load %1 again?").arg(m.name), tr("Load %1").arg(m.name),
                load);
#endif
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
  // A size saved on a larger screen (or by a window that content once widened) fits this one.
  if (const QScreen* s = screen()) {
    const QRect fitted = fitToScreen(geometry(), s->availableGeometry(), minimumSizeHint());
    if (fitted != geometry()) setGeometry(fitted);
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
