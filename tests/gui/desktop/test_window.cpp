// The main window as a desktop user meets it: its width never follows the content (long titles,
// long words, long code lines, a long first message, streaming, switching chats) and a saved
// geometry larger than the screen is fitted to it; the menus list every shortcut and each shortcut
// does what its menu says; dark mode reaches charts, banners, the heatmap, messages and status
// colours, and System brings the platform's palette back; the window has the app icon; the model
// loaded last is offered (or loaded) at the next start. Screenshots of every page in light and
// dark mode go to INFERDESK_SCREENSHOT_DIR.
#include <QAbstractButton>
#include <QApplication>
#include <QFileDialog>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QListWidget>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QScreen>
#include <QSplitter>
#include <QTemporaryDir>
#include <QtTest>

#include <map>

#include "gui/app/app_menu.h"
#include "gui/app/elided_label.h"
#include "gui/app/settings_dialog.h"
#include "gui/app/theme.h"
#include "gui/app/window_geometry.h"
#include "gui/chat/chat_list_model.h"
#include "gui/chat/conversation_view.h"
#include "gui/chat/markdown_view.h"
#include "gui/chat/message_widget.h"
#include "gui/chat/sampling_panel.h"
#include "gui/models/last_model.h"
#include "gui/perf/expert_heatmap.h"
#include "gui/perf/perf_page.h"
#include "gui/perf/time_series_chart.h"
#include "tests/gui/support/chat_app.h"

#include <QComboBox>
#include <QSpinBox>

using namespace inferdesk;
using namespace inferdesk::gui;
using test::ChatApp;
using test::set_max_tokens;

namespace {

// Types `text` into the composer and presses Enter.
void type_and_send(ChatPage* page, const QString& text) {
  page->composer()->setFocus();
  page->composer()->setPlainText(text);
  QTest::keyClick(page->composer(), Qt::Key_Return);
}

QString words(int n) {
  QStringList w;
  for (int i = 0; i < n; ++i) w << QString("word%1").arg(i);
  return w.join(' ');
}

void activate(QWidget* w) {
  w->activateWindow();
  QApplication::setActiveWindow(w);
  QVERIFY(QTest::qWaitForWindowActive(w));
}

}  // namespace

class TestWindow : public QObject {
  Q_OBJECT

 private slots:
  void widthNeverFollowsTheContent();
  void savedGeometryFitsTheScreen();
  void menusListEveryShortcut();
  void shortcutsDoWhatTheMenusSay();
  void statusColoursHaveContrastInBothThemes();
  void darkModeReachesEveryColour();
  void settingsDialogSavesTheTheme();
  void windowHasTheAppIcon();
  void lastModelIsOfferedAtStart();
  void cleanupTestCase() {
    if (auto* app = qobject_cast<QApplication*>(QCoreApplication::instance())) applyTheme(*app, ThemeChoice::System);
  }
};

void TestWindow::widthNeverFollowsTheContent() {
  QTemporaryDir dir;
  ChatApp app(dir.path());
  QVERIFY(QTest::qWaitForWindowExposed(app.window.get()));
  QVERIFY(app.load());
  app.window->showPage(Page::Chat);
  QTest::qWait(100);
  const int width = app.window->width();
  qInfo("window %d px wide, minimum %d px; screen %s", width, app.window->minimumSizeHint().width(),
        qPrintable(QString("%1x%2")
                       .arg(app.window->screen()->availableGeometry().width())
                       .arg(app.window->screen()->availableGeometry().height())));
  QVERIFY(app.window->minimumSizeHint().width() <= 800);
  ChatPage* page = app.page;
  const int list_width = page->splitter()->sizes().at(0);
  int widest = width;
  QTimer sampler;
  connect(&sampler, &QTimer::timeout, this, [&] { widest = std::max(widest, app.window->width()); });
  sampler.start(10);

  // A 98-character title: elided, the whole title in the tooltip.
  QString title = "A chat renamed to a very long title";
  for (int i = 0; title.size() < 98; ++i) title += QString(" part%1").arg(i);
  title = title.left(98);
  if (title.endsWith(' ')) title[97] = 'x';
  QCOMPARE(title.size(), 98);
  const std::int64_t a = page->newChat();
  QVERIFY(page->chatList()->renameChat(a, title));
  QTest::qWait(100);
  QCOMPARE(page->titleLabel()->text(), title);
  QVERIFY(page->titleLabel()->isElided());
  QVERIFY(page->titleLabel()->toolTip().contains(title));
  QCOMPARE(app.window->width(), width);

  // A long first message: its reply streams, the chat is titled from it.
  const std::int64_t b = page->newChat();
  set_max_tokens(page, 64);
  type_and_send(page, words(120));
  QVERIFY(app.settle());
  QCOMPARE(app.window->width(), width);

  // Long unbroken words and long code lines wrap inside their message.
  const std::int64_t c = page->newChat();
  type_and_send(page, QString(400, 'x') + "\n\n```\n" + QString("y").repeated(300) + " = 1;\n```\n" +
                          "and a path /very/long/" + QString("segment").repeated(40));
  QVERIFY(app.settle());
  QCOMPARE(app.window->width(), width);
  ConversationView* view = page->conversationView();
  QVERIFY(view->widget()->width() <= view->viewport()->width());
  for (int row = 0; row < page->conversation()->rowCount(); ++row)
    QVERIFY(view->messageAt(row)->geometry().right() <= view->viewport()->width());
  for (int round = 0; round < 3; ++round)
    for (std::int64_t id : {a, b, c}) {
      QVERIFY(page->selectChat(id));
      QTest::qWait(30);
    }
  sampler.stop();
  QCOMPARE(app.window->width(), width);
  QCOMPARE(widest, width);  // not even for a moment
  // The chat list keeps its width through all of it, and when the window is resized only the
  // conversation column follows.
  QCOMPARE(page->splitter()->sizes().at(0), list_width);
  app.window->resize(width - 150, app.window->height());
  QTest::qWait(50);
  QCOMPARE(page->splitter()->sizes().at(0), list_width);
  app.window->resize(width, app.window->height());
  QTest::qWait(50);
  QCOMPARE(page->splitter()->sizes().at(0), list_width);
  test::saveScreenshot(app.window.get(), "desktop-long-content");
}

void TestWindow::savedGeometryFitsTheScreen() {
  const QRect screen = QGuiApplication::primaryScreen()->availableGeometry();
  const QRect fitted = fitToScreen(QRect(-500, -400, 5000, 4000), screen, QSize(600, 400));
  QVERIFY(screen.contains(fitted));
  QCOMPARE(fitToScreen(QRect(screen.left() + 10, screen.top() + 10, 300, 200), screen, QSize(100, 100)),
           QRect(screen.left() + 10, screen.top() + 10, 300, 200));  // what fits stays
  QTemporaryDir dir;
  {
    ChatApp grown(dir.path());
    QVERIFY(QTest::qWaitForWindowExposed(grown.window.get()));
    grown.window->resize(screen.width() + 700, screen.height() + 500);  // as a grown window was saved
    grown.window->close();
  }
  ChatApp again(dir.path(), QSize());
  QVERIFY2(screen.contains(again.window->geometry()), qPrintable(QString("%1,%2 %3x%4 in %5x%6")
                                                                     .arg(again.window->x())
                                                                     .arg(again.window->y())
                                                                     .arg(again.window->width())
                                                                     .arg(again.window->height())
                                                                     .arg(screen.width())
                                                                     .arg(screen.height())));
}

void TestWindow::menusListEveryShortcut() {
  QTemporaryDir dir;
  ChatApp app(dir.path());
  std::map<QString, QString> listed;  // shortcut -> menu entry
  for (QAction* top : app.window->menuBar()->actions())
    if (QMenu* m = top->menu())
      for (QAction* a : m->actions())
        if (!a->shortcut().isEmpty()) listed[a->shortcut().toString(QKeySequence::PortableText)] = a->text();
  for (const char* key : {"Ctrl+N", "Ctrl+O", "Ctrl+E", "Ctrl+,", "Ctrl+Q", "Ctrl+F", "Ctrl+L", "Del", "Esc",
                          "Ctrl+Shift+R", "Ctrl+1", "Ctrl+2", "Ctrl+3", "F1"})
    QVERIFY2(listed.count(key), qPrintable(QString("no menu entry for ") + key));
  QVERIFY(listed["Ctrl+N"].contains("New chat"));
  QVERIFY(listed["Esc"].contains("Stop"));
  QVERIFY(listed["Ctrl+Shift+R"].contains("Regenerate"));
  QVERIFY(shortcutsTable(app.window->commands()).contains("Ctrl+Shift+R"));
}

void TestWindow::shortcutsDoWhatTheMenusSay() {
  QTemporaryDir dir;
  ChatApp app(dir.path());
  QVERIFY(QTest::qWaitForWindowExposed(app.window.get()));
  QVERIFY(app.load());
  MainWindow* w = app.window.get();
  ChatPage* page = app.page;
  w->showPage(Page::Models);
  activate(w);
  // Ctrl+N: a new chat on the Chat page, the message box ready.
  const int chats = page->chatList()->rowCount();
  QTest::keyClick(w, Qt::Key_N, Qt::ControlModifier);
  QCOMPARE(page->chatList()->rowCount(), chats + 1);
  QCOMPARE(w->currentPage(), Page::Chat);
  QTRY_COMPARE(QApplication::focusWidget(), page->composer());
  // Ctrl+F and Ctrl+L move the focus.
  QTest::keyClick(w, Qt::Key_F, Qt::ControlModifier);
  QTRY_COMPARE(QApplication::focusWidget(), page->searchBox());
  QTest::keyClick(w, Qt::Key_L, Qt::ControlModifier);
  QTRY_COMPARE(QApplication::focusWidget(), page->composer());
  // Esc stops a reply.
  set_max_tokens(page, 3900);
  type_and_send(page, "Tell me a long story");
  QVERIFY(page->session()->isGenerating());
  QTRY_VERIFY_WITH_TIMEOUT(app.content(1).size() > 0, 30000);
  QTest::keyClick(page->composer(), Qt::Key_Escape);
  QTRY_VERIFY_WITH_TIMEOUT(!page->session()->isGenerating(), 30000);
  QCOMPARE(page->conversation()->data(page->conversation()->index(1), ConversationModel::StatusRole).toString(),
           QString("stopped"));
  // Ctrl+Shift+R: another version of the last reply.
  set_max_tokens(page, 8);
  QTest::keyClick(w, Qt::Key_R, Qt::ControlModifier | Qt::ShiftModifier);
  QVERIFY(page->session()->isGenerating());
  QVERIFY(app.settle());
  QTRY_COMPARE(page->conversationView()->messageAt(1)->siblingLabel()->text(), QString("2/2"));
  // Ctrl+E: the export dialog; JSON keeps both versions.
  QTest::keyClick(w, Qt::Key_E, Qt::ControlModifier);
  QFileDialog* save = nullptr;
  QTRY_VERIFY((save = w->findChild<QFileDialog*>("exportDialog")) != nullptr);
  const QString path = dir.path() + "/exported.json";
  save->selectFile(path);
  static_cast<QDialog*>(save)->accept();  // QFileDialog::accept: the file chosen
  QTRY_VERIFY(QFileInfo::exists(path));
  QFile f(path);
  QVERIFY(f.open(QIODevice::ReadOnly));
  QCOMPARE(QJsonDocument::fromJson(f.readAll()).object().value("messages").toArray().size(), 3);
  // Ctrl+O: import it back as a new chat.
  const int before_import = page->chatList()->rowCount();
  QTest::keyClick(w, Qt::Key_O, Qt::ControlModifier);
  QFileDialog* open = nullptr;
  QTRY_VERIFY((open = w->findChild<QFileDialog*>("importDialog")) != nullptr);
  open->selectFile(path);
  static_cast<QDialog*>(open)->accept();
  QTRY_COMPARE(page->chatList()->rowCount(), before_import + 1);
  QCOMPARE(page->conversation()->rowCount(), 2);
  // Delete in the chat list asks, naming the chat.
  page->chatListView()->setFocus();
  QTest::keyClick(page->chatListView(), Qt::Key_Delete);
  QMessageBox* box = nullptr;
  QTRY_VERIFY((box = page->findChild<QMessageBox*>("deleteChatConfirmation")) != nullptr);
  QVERIFY2(box->text().contains("Tell me a long story"), qPrintable(box->text()));
  box->button(QMessageBox::Cancel)->click();
  QTRY_VERIFY(page->findChild<QMessageBox*>("deleteChatConfirmation") == nullptr);
  QCOMPARE(page->chatList()->rowCount(), before_import + 1);
  activate(w);
  // The pages, the shortcuts list, the settings.
  QTest::keyClick(w, Qt::Key_2, Qt::ControlModifier);
  QCOMPARE(w->currentPage(), Page::Models);
  QTest::keyClick(w, Qt::Key_3, Qt::ControlModifier);
  QCOMPARE(w->currentPage(), Page::Performance);
  QTest::keyClick(w, Qt::Key_1, Qt::ControlModifier);
  QCOMPARE(w->currentPage(), Page::Chat);
  QTest::keyClick(w, Qt::Key_F1);
  QMessageBox* keys = nullptr;
  QTRY_VERIFY((keys = w->findChild<QMessageBox*>("shortcutsDialog")) != nullptr);
  QVERIFY(keys->text().contains("Ctrl+L"));
  keys->close();
  activate(w);
  QTest::keyClick(w, Qt::Key_Comma, Qt::ControlModifier);
  SettingsDialog* settings = nullptr;
  QTRY_VERIFY((settings = w->findChild<SettingsDialog*>("settingsDialog")) != nullptr && settings->isVisible());
  settings->close();
  activate(w);
  // Ctrl+Q closes the window (and saves its geometry on the way).
  QTest::keyClick(w, Qt::Key_Q, Qt::ControlModifier);
  QTRY_VERIFY(!w->isVisible());
  QVERIFY(app.ctx().settings.get("window/geometry").has_value());
}

void TestWindow::statusColoursHaveContrastInBothThemes() {
  for (const QPalette& pal : {lightPalette(), darkPalette()}) {
    const StatusColors c = statusColors(pal);
    const QColor window = pal.color(QPalette::Window), base = pal.color(QPalette::Base);
    const std::vector<std::tuple<const char*, QColor, QColor>> pairs = {
        {"error text", c.error_text, c.error_background},
        {"warning text", c.warning_text, c.warning_background},
        {"link on error banner", pal.color(QPalette::Link), c.error_background},
        {"link on notice banner", pal.color(QPalette::Link), c.warning_background},
        {"fits", c.good_text, window},
        {"will not fit", c.bad_text, window},
        {"text", pal.color(QPalette::Text), base},
        {"window text", pal.color(QPalette::WindowText), window},
        {"dense layer label", pal.color(QPalette::Text), c.dense},
    };
    for (const auto& [what, fg, bg] : pairs)
      QVERIFY2(contrastRatio(fg, bg) >= 4.5, qPrintable(QString("%1: %2 on %3 is %4:1 (%5)")
                                                            .arg(what, fg.name(), bg.name())
                                                            .arg(contrastRatio(fg, bg), 0, 'f', 2)
                                                            .arg(isDarkPalette(pal) ? "dark" : "light")));
    QVERIFY(contrastRatio(pal.color(QPalette::PlaceholderText), window) >= 3.0);  // hints
  }
  QVERIFY(isDarkPalette(darkPalette()));
  QVERIFY(!isDarkPalette(lightPalette()));
  QCOMPARE(contrastRatio(Qt::black, Qt::white), 21.0);
}

void TestWindow::darkModeReachesEveryColour() {
  auto* qapp = qobject_cast<QApplication*>(QCoreApplication::instance());
  const QColor system_window = QApplication::palette().color(QPalette::Window);
  QTemporaryDir dir;
  ChatApp app(dir.path());
  QVERIFY(QTest::qWaitForWindowExposed(app.window.get()));
  const auto chat = app.ctx().chats.create_chat("Colours");
  const auto u = app.ctx().chats.add_message(chat, 0, store::Role::User, "Hello `code`");
  app.ctx().chats.add_message(chat, u, store::Role::Assistant, "A reply with `code`.");
  app.page->chatList()->reload();
  QVERIFY(app.page->selectChat(chat));
  for (const ThemeChoice theme : {ThemeChoice::Dark, ThemeChoice::Light}) {
    applyTheme(*qapp, theme);
    QTest::qWait(50);
    const QPalette pal = QApplication::palette();
    QCOMPARE(isDarkPalette(pal), theme == ThemeChoice::Dark);
    const StatusColors colors = statusColors(pal);
    // Charts: background and labels from the palette.
    for (TimeSeriesChart* c : app.window->perfPage()->charts()) {
      QCOMPARE(c->chart()->backgroundBrush().color(), pal.color(QPalette::Base));
      QCOMPARE(c->yAxis()->labelsColor(), pal.color(QPalette::Text));
      QCOMPARE(c->chart()->titleBrush().color(), pal.color(QPalette::Text));
    }
    // The heatmap's empty cells.
    ExpertHeatmap* map = app.window->perfPage()->heatmap();
    map->resize(400, 200);
    map->setCounts(2, 2, {0, 1, 2, 3});
    QCOMPARE(map->grab().toImage().pixelColor(map->cellRect(0, 0).center()), colors.empty);
    // Banners: an error notice (sending without a model).
    app.window->showPage(Page::Chat);
    app.page->composer()->setPlainText("anyone?");
    app.page->sendComposerText();
    QVERIFY(app.page->noticeLabel()->isVisible());
    QVERIFY2(app.page->noticeLabel()->styleSheet().contains(colors.error_background.name()),
             qPrintable(app.page->noticeLabel()->styleSheet()));
    // Messages: their frames are drawn from the new base colour.
    const QImage shot = app.window->grab().toImage();
    MessageWidget* reply = app.page->conversationView()->messageAt(1);
    const QPoint inside = reply->mapTo(app.window.get(), QPoint(reply->width() - 30, reply->height() - 6));
    QCOMPARE(shot.pixelColor(inside), pal.color(QPalette::Base));
    QCOMPARE(reply->backgroundColor(), pal.color(QPalette::Base));
    QCOMPARE(app.page->conversationView()->messageAt(1)->body()->segments().first()->palette().color(QPalette::Text),
             pal.color(QPalette::Text));
    QCOMPARE(app.window->sidebar()->viewport()->palette().color(QPalette::Window), pal.color(QPalette::Window));
    // The models page's estimate in the status colour of this palette.
    app.window->showPage(Page::Models);
    QTest::qWait(100);
    test::saveScreenshot(app.window.get(),
                         theme == ThemeChoice::Dark ? "desktop-dark-models-empty" : "desktop-light-models-empty");
    app.window->showPage(Page::Chat);
    QTest::qWait(100);
    test::saveScreenshot(app.window.get(), theme == ThemeChoice::Dark ? "desktop-dark-chat" : "desktop-light-chat");
  }
  applyTheme(*qapp, ThemeChoice::System);
  QCOMPARE(QApplication::palette().color(QPalette::Window), system_window);
  for (TimeSeriesChart* c : app.window->perfPage()->charts())
    QCOMPARE(c->chart()->backgroundBrush().color(), QApplication::palette().color(QPalette::Base));
}

void TestWindow::settingsDialogSavesTheTheme() {
  QTemporaryDir dir;
  {
    ChatApp app(dir.path());
    app.window->showSettings();
    SettingsDialog* d = app.window->findChild<SettingsDialog*>("settingsDialog");
    QVERIFY(d);
    d->themeBox()->setCurrentIndex(d->themeBox()->findData("dark"));
    QVERIFY(isDarkPalette(QApplication::palette()));
    QCOMPARE(app.ctx().settings.get(kThemeSettingKey).value_or(""), std::string("dark"));
    d->startupModelBox()->setCurrentIndex(d->startupModelBox()->findData("nothing"));
    QCOMPARE(LastModelMemory(app.ctx().settings).policy(), StartupModel::Nothing);
  }
  auto* qapp = qobject_cast<QApplication*>(QCoreApplication::instance());
  applyTheme(*qapp, ThemeChoice::System);
  QVERIFY(!isDarkPalette(QApplication::palette()));
  ChatApp again(dir.path());  // the saved choice comes back at start
  QVERIFY(isDarkPalette(QApplication::palette()));
  applyTheme(*qapp, ThemeChoice::System);
}

void TestWindow::windowHasTheAppIcon() {
  QTemporaryDir dir;
  ChatApp app(dir.path());
  QVERIFY(!app.window->windowIcon().isNull());
  QVERIFY(!QApplication::windowIcon().isNull());
  const QImage img = app.window->windowIcon().pixmap(64, 64).toImage();
  QCOMPARE(img.width(), 64);
  QVERIFY(img.pixelColor(32, 20).alpha() == 255);  // the bubble's tile
  QVERIFY(img.pixelColor(32, 20) != img.pixelColor(32, 40) || img.pixelColor(2, 32).alpha() < 255);
}

void TestWindow::lastModelIsOfferedAtStart() {
  QTemporaryDir dir;
  {
    ChatApp first(dir.path());
    QVERIFY(first.load("tiny-chat", 2048));
  }
  {  // Offer: a notice with a link that loads it again.
    ChatApp next(dir.path());
    QVERIFY(!next.engine()->isLoaded());
    QVERIFY(next.page->noticeLabel()->isVisible());
    QVERIFY2(next.page->noticeLabel()->text().contains("Load tiny-chat again?"),
             qPrintable(next.page->noticeLabel()->text()));
    QSignalSpy loaded(next.engine(), &EngineController::modelLoaded);
    emit next.page->noticeLabel()->linkActivated("offer");
    QVERIFY(loaded.wait(60000));
    QCOMPARE(next.engine()->loadedModel()->context_length, 2048);
    QVERIFY(!next.page->noticeLabel()->isVisible());
  }
  {  // Load: no question.
    AppSession s(dir.path());
    LastModelMemory(s.context().settings).setPolicy(StartupModel::Load);
  }
  {
    ChatApp loads(dir.path());
    QTRY_VERIFY_WITH_TIMEOUT(loads.window->modelsPage()->manager()->loadedId() != 0, 60000);
    QVERIFY(!loads.page->noticeLabel()->text().contains("again?"));
    loads.window->modelsPage()->manager()->unload();  // the user's choice: not offered any more
    QTRY_VERIFY(!loads.engine()->isLoaded());
  }
  ChatApp after(dir.path());
  QTest::qWait(200);
  QVERIFY(!after.engine()->isLoaded());
  QVERIFY(!after.page->noticeLabel()->isVisible());
}

QTEST_MAIN(TestWindow)
#include "test_window.moc"
