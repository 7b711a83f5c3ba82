// The composer and the conversation as a user types: 20 messages typed during a reply become 20
// user messages, in order, none merged and none lost (each waits in the queue above the composer
// and goes out when the reply before it ends); queued messages can be removed, Stop pauses the
// queue and Send resumes it; the empty chat says to load a model first (with the link); Copy says
// "Copied"; Shift+Enter line breaks stay; chat titles carry no markdown; the delete confirmation
// names the chat it deletes even when a search hides it.
#include <QApplication>
#include <QClipboard>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTemporaryDir>
#include <QToolButton>
#include <QtTest>

#include "gui/app/elided_label.h"
#include "gui/chat/chat_list_model.h"
#include "gui/chat/conversation_view.h"
#include "gui/chat/markdown_view.h"
#include "gui/chat/message_widget.h"
#include "gui/chat/pending_view.h"
#include "gui/chat/sampling_panel.h"
#include "tests/gui/support/chat_app.h"

using namespace inferdesk;
using namespace inferdesk::gui;
using test::ChatApp;
using test::set_max_tokens;

namespace {

// Types `text` key by key into the composer, then Enter (the way a user does).
void type(ChatPage* page, const QString& text) {
  QTest::keyClicks(page->composer(), text);
  QTest::keyClick(page->composer(), Qt::Key_Return);
}

QStringList user_messages(store::ChatStore& chats, std::int64_t chat) {
  QStringList out;
  for (const auto& m : chats.path_to(chats.get_chat(chat).current_leaf))
    if (m.role == store::Role::User) out << QString::fromStdString(m.content);
  return out;
}

}  // namespace

class TestComposer : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    app_ = std::make_unique<ChatApp>(dir_.path());
    QVERIFY(QTest::qWaitForWindowExposed(app_->window.get()));
  }
  void emptyChatSaysLoadAModelFirst();
  void twentyMessagesTypedDuringAReply();
  void queuedMessagesCanBeRemovedAndStopPauses();
  void copySaysCopied();
  void shiftEnterLineBreaksStay();
  void titlesCarryNoMarkdown();
  void deleteNamesTheChatWhenASearchHidesIt();
  void cleanupTestCase() { app_.reset(); }

 private:
  QTemporaryDir dir_;
  std::unique_ptr<ChatApp> app_;
};

void TestComposer::emptyChatSaysLoadAModelFirst() {
  ChatPage* page = app_->page;
  app_->window->showPage(Page::Chat);
  ConversationView* view = page->conversationView();
  QVERIFY(view->placeholderVisible());
  QVERIFY2(view->placeholderText().contains("load a model first"), qPrintable(view->placeholderText()));
  emit view->linkActivated("models");
  QCOMPARE(app_->window->currentPage(), Page::Models);
  QVERIFY(app_->load());
  app_->window->showPage(Page::Chat);
  QVERIFY(view->placeholderText().contains("Type a message below"));
}

void TestComposer::twentyMessagesTypedDuringAReply() {
  ChatPage* page = app_->page;
  const std::int64_t chat = page->newChat();
  set_max_tokens(page, 24);
  page->composer()->setFocus();
  type(page, "msg 1");
  QVERIFY(page->session()->isGenerating());
  QCOMPARE(page->sendButton()->text(), QString("Queue"));  // the state is visible
  QVERIFY(page->sendButton()->isEnabled());
  for (int i = 2; i <= 20; ++i) type(page, QString("msg %1").arg(i));  // faster than any reply
  QCOMPARE(page->composer()->toPlainText(), QString());
  QVERIFY(page->pendingView()->isVisible());
  QVERIFY(page->pendingView()->count() >= 18);  // waiting, as typed
  QVERIFY(page->pendingView()->textAt(0) == "msg 2" || page->pendingView()->textAt(0) == "msg 3");
  QVERIFY(app_->settle(120000));
  QStringList expected;
  for (int i = 1; i <= 20; ++i) expected << QString("msg %1").arg(i);
  QCOMPARE(user_messages(app_->ctx().chats, chat), expected);
  QCOMPARE(page->conversation()->rowCount(), 40);  // and a reply to each
  QVERIFY(!page->pendingView()->isVisible());
  QCOMPARE(page->sendButton()->text(), QString("Send"));
}

void TestComposer::queuedMessagesCanBeRemovedAndStopPauses() {
  ChatPage* page = app_->page;
  const std::int64_t chat = page->newChat();
  set_max_tokens(page, 3000);
  type(page, "first");
  QVERIFY(page->session()->isGenerating());
  type(page, "second");
  type(page, "third");
  type(page, "fourth");
  QCOMPARE(page->pendingView()->count(), 3);
  QTest::mouseClick(page->pendingView()->removeButton(1), Qt::LeftButton);  // "third" is not wanted
  QTRY_COMPARE(page->pendingView()->count(), 2);
  QCOMPARE(page->pendingView()->textAt(1), QString("fourth"));
  QTest::mouseClick(page->stopButton(), Qt::LeftButton);  // Stop: nothing else goes out on its own
  QTRY_VERIFY_WITH_TIMEOUT(!page->session()->isGenerating(), 30000);
  QTest::qWait(300);
  QVERIFY(!page->session()->isGenerating());
  QVERIFY(page->session()->isQueuePaused(chat));
  QVERIFY(page->pendingView()->statusLabel()->text().contains("paused"));
  QCOMPARE(user_messages(app_->ctx().chats, chat), QStringList{"first"});
  set_max_tokens(page, 8);
  QTest::mouseClick(page->sendButton(), Qt::LeftButton);  // Send with an empty box resumes
  QVERIFY(app_->settle());
  QCOMPARE(user_messages(app_->ctx().chats, chat), (QStringList{"first", "second", "fourth"}));
}

void TestComposer::copySaysCopied() {
  ChatPage* page = app_->page;
  MessageWidget* w = page->conversationView()->messageAt(0);
  QVERIFY(w);
  QTest::mouseClick(w->copyButton(), Qt::LeftButton);
  QCOMPARE(QGuiApplication::clipboard()->text(), QString("first"));
  QVERIFY(w->copyButton()->text().startsWith("Copied"));
  QTRY_COMPARE_WITH_TIMEOUT(w->copyButton()->text(), QString("Copy"), 3000);
}

void TestComposer::shiftEnterLineBreaksStay() {
  ChatPage* page = app_->page;
  page->newChat();
  set_max_tokens(page, 8);
  QTest::keyClicks(page->composer(), "line one");
  QTest::keyClick(page->composer(), Qt::Key_Return, Qt::ShiftModifier);
  QTest::keyClicks(page->composer(), "line two");
  QTest::keyClick(page->composer(), Qt::Key_Return);
  QVERIFY(app_->settle());
  QCOMPARE(app_->content(0), QString("line one\nline two"));
  const QString shown = page->conversationView()->messageAt(0)->body()->toPlainText();
  QVERIFY2(shown.contains(QRegularExpression("line one[\\n\\x{2028}]line two")), qPrintable(shown));
}

void TestComposer::titlesCarryNoMarkdown() {
  ChatPage* page = app_->page;
  const std::int64_t chat = page->newChat();
  set_max_tokens(page, 8);
  type(page, "## **Bold** question about `code`");
  QVERIFY(app_->settle());
  QCOMPARE(QString::fromStdString(app_->ctx().chats.get_chat(chat).title), QString("Bold question about code"));
  QCOMPARE(page->titleLabel()->text(), QString("Bold question about code"));
}

void TestComposer::deleteNamesTheChatWhenASearchHidesIt() {
  ChatPage* page = app_->page;
  const std::int64_t shown = page->currentChatId();
  const QString title = QString::fromStdString(app_->ctx().chats.get_chat(shown).title);
  page->searchBox()->setText("msg 17");  // matches another chat only
  QCOMPARE(page->chatList()->rowOf(shown), -1);
  QCOMPARE(page->currentChatId(), shown);
  page->deleteChat(shown, true);
  QMessageBox* box = nullptr;
  QTRY_VERIFY((box = page->findChild<QMessageBox*>("deleteChatConfirmation")) != nullptr);
  QVERIFY2(box->text().contains(title), qPrintable(box->text()));
  box->button(QMessageBox::Cancel)->click();
  QTRY_VERIFY(page->findChild<QMessageBox*>("deleteChatConfirmation") == nullptr);
  page->searchBox()->clear();
  QVERIFY(page->chatList()->rowOf(shown) >= 0);
}

QTEST_MAIN(TestComposer)
#include "test_composer.moc"
