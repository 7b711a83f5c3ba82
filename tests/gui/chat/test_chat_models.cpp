// The chat page's parts without a model: the item models (checked by QAbstractItemModelTester and
// their row signals), sampling JSON, context fitting with a counting renderer, export, the
// sampling panel's presets, and what sending without a model does.
#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFontDatabase>
#include <QFontInfo>
#include <QInputDialog>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTextBlock>
#include <QTextDocument>
#include <QtTest>

#include <algorithm>
#include <memory>

#include "core/store/store.h"
#include "gui/app/app_context.h"
#include "gui/chat/chat_export.h"
#include "gui/chat/chat_list_model.h"
#include "gui/chat/chat_session.h"
#include "gui/chat/context_fit.h"
#include "gui/chat/conversation_model.h"
#include "gui/chat/markdown_view.h"
#include "gui/chat/sampling_json.h"
#include "gui/chat/sampling_panel.h"

using namespace inferdesk;
using namespace inferdesk::gui;

namespace {

// A store in a temporary folder with a clock that ticks 1 s per call (a deterministic order).
struct TempStore {
  QTemporaryDir dir;
  std::int64_t now = 1'700'000'000'000;
  std::unique_ptr<store::Database> db;
  std::unique_ptr<store::ChatStore> chats;
  std::unique_ptr<store::ModelRegistry> models;
  std::unique_ptr<store::Settings> settings;

  TempStore() { open(); }
  void open(bool read_only = false) {
    settings.reset();
    models.reset();
    chats.reset();
    db.reset();
    store::Database::Options o;
    o.read_only = read_only;
    o.clock = [this] { return now += 1000; };
    db = std::make_unique<store::Database>((dir.path() + "/test.db").toStdString(), o);
    chats = std::make_unique<store::ChatStore>(*db);
    models = std::make_unique<store::ModelRegistry>(*db);
    settings = std::make_unique<store::Settings>(*db);
  }
  AppContext context() { return AppContext{*db, *chats, *models, *settings, nullptr, dir.path(), {}}; }
};

// Counts a "token" per character plus 3 per message, like a template's role markers.
RenderedPrompt count_chars(const std::vector<PromptMessage>& msgs) {
  RenderedPrompt r;
  for (const auto& m : msgs) {
    r.text += "<" + m.role + ">" + m.content;
    r.ids.insert(r.ids.end(), static_cast<size_t>(m.content.size()) + 3, 7);
  }
  return r;
}

std::vector<PromptMessage> conversation_of(int turns, int chars_per_message, bool system) {
  std::vector<PromptMessage> msgs;
  if (system) msgs.push_back({"system", QString(10, 's')});
  for (int t = 0; t < turns; ++t) {
    msgs.push_back({"user", QString("question %1 ").arg(t) + QString(chars_per_message, 'q')});
    msgs.push_back({"assistant", QString("answer %1 ").arg(t) + QString(chars_per_message, 'a')});
  }
  msgs.push_back({"user", "last question"});
  return msgs;
}

}  // namespace

class TestChatModels : public QObject {
  Q_OBJECT

 private slots:
  void chatListRowsFollowTheStore();
  void chatListSearchAndErrors();
  void conversationFollowsBranches();
  void samplingJsonIsValidated();
  void contextFitDropsOldestTurns();
  void contextFitRefusesWhatCannotFit();
  void exportContainsTheBranchWithStats();
  void samplingPanelPresets();
  void sendingWithoutModelSavesNothing();
  void markdownSplitsAtSafeBoundaries();
  void markdownKeepsLineBreaksAndCodeFonts();
  void titlesAreFreeOfMarkdown();
};

void TestChatModels::chatListRowsFollowTheStore() {
  TempStore s;
  ChatListModel model(*s.chats);
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
  QSignalSpy removed(&model, &QAbstractItemModel::rowsRemoved);
  QSignalSpy moved(&model, &QAbstractItemModel::rowsMoved);
  QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);

  const auto a = model.createChat("alpha");
  const auto b = model.createChat("beta");
  const auto c = model.createChat("gamma");
  QVERIFY(a && b && c);
  QCOMPARE(inserted.count(), 3);
  QCOMPARE(model.rowCount(), 3);
  QCOMPARE(model.idAt(0), c);  // newest first
  QCOMPARE(model.data(model.index(2)).toString(), QString("alpha"));

  // Renaming through the view's edit role: saved and shown where it is (the row under the mouse
  // stays the same chat), dataChanged.
  QVERIFY(model.setData(model.index(2), "alpha renamed"));
  QCOMPARE(moved.count(), 0);
  QVERIFY(changed.count() >= 1);
  QCOMPARE(model.idAt(2), a);
  QCOMPARE(model.data(model.index(2)).toString(), QString("alpha renamed"));
  QCOMPARE(QString::fromStdString(s.chats->get_chat(a).title), QString("alpha renamed"));
  QVERIFY(!model.setData(model.index(0), "   "));  // an empty title is refused
  // A settings change (a preset applied, the system prompt) does not move it either.
  s.chats->set_sampling_json(a, R"({"temperature":0.2})");
  s.chats->set_system_prompt(a, "Be brief.");
  model.chatTouched(a);
  QCOMPARE(moved.count(), 0);
  QCOMPARE(model.idAt(2), a);

  // A message moves the chat to the top; a reload gives the same order (newest message first).
  s.chats->add_message(b, 0, store::Role::User, "hello");
  model.chatTouched(b);
  QCOMPARE(moved.count(), 1);
  QCOMPARE(model.idAt(0), b);
  s.chats->add_message(a, 0, store::Role::User, "and you");
  model.chatTouched(a);
  QCOMPARE(model.idAt(0), a);
  QCOMPARE(model.idAt(1), b);
  QCOMPARE(model.idAt(2), c);
  ChatListModel reloaded(*s.chats);
  reloaded.reload();
  for (int row = 0; row < model.rowCount(); ++row) QCOMPARE(reloaded.idAt(row), model.idAt(row));

  QVERIFY(model.deleteChat(c));
  QCOMPARE(removed.count(), 1);
  QCOMPARE(model.rowCount(), 2);
  QCOMPARE(model.rowOf(c), -1);
  QCOMPARE(s.chats->list_chats().size(), size_t{2});
}

void TestChatModels::chatListSearchAndErrors() {
  TempStore s;
  {
    ChatListModel model(*s.chats);
    model.createChat("Rust questions");
    const auto other = model.createChat("Cooking");
    s.chats->add_message(other, 0, store::Role::User, "how long do I boil an egg?");
  }
  ChatListModel model(*s.chats);
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
  model.reload();
  QCOMPARE(model.rowCount(), 2);
  model.setFilter("EGG");  // message text, case-insensitive
  QCOMPARE(reset.count(), 2);
  QCOMPARE(model.rowCount(), 1);
  QCOMPARE(model.data(model.index(0)).toString(), QString("Cooking"));
  model.setFilter("rust");
  QCOMPARE(model.rowCount(), 1);
  model.setFilter("");
  QCOMPARE(model.rowCount(), 2);

  // A read-only database: creating fails with a message, the rows stay as they were.
  s.open(/*read_only=*/true);
  ChatListModel ro(*s.chats);
  QAbstractItemModelTester ro_tester(&ro, QAbstractItemModelTester::FailureReportingMode::QtTest);
  ro.reload();
  QSignalSpy errors(&ro, &ChatListModel::errorOccurred);
  QSignalSpy inserted(&ro, &QAbstractItemModel::rowsInserted);
  QCOMPARE(ro.createChat("nope"), std::int64_t{0});
  QCOMPARE(errors.count(), 1);
  QCOMPARE(inserted.count(), 0);
  QCOMPARE(ro.rowCount(), 2);
  QVERIFY(!ro.renameChat(ro.idAt(0), "x"));
  QVERIFY(!ro.deleteChat(ro.idAt(0)));
  QCOMPARE(ro.rowCount(), 2);
}

void TestChatModels::conversationFollowsBranches() {
  TempStore s;
  const auto chat = s.chats->create_chat("t");
  const auto u1 = s.chats->add_message(chat, 0, store::Role::User, "first question");
  const auto a1 = s.chats->add_message(chat, u1, store::Role::Assistant, "first answer");
  s.chats->finish_message(a1, store::MessageStatus::Complete,
                          R"({"tokens":12,"tokens_per_s":40.5,"ttft_s":0.25,"finish_reason":"stop"})");

  ConversationModel model(*s.chats);
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
  QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
  QSignalSpy removed(&model, &QAbstractItemModel::rowsRemoved);
  QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
  model.setChat(chat);
  QCOMPARE(reset.count(), 1);
  QCOMPARE(model.rowCount(), 2);
  QCOMPARE(model.data(model.index(0), ConversationModel::RoleNameRole).toString(), QString("user"));
  QCOMPARE(model.data(model.index(1)).toString(), QString("first answer"));
  QCOMPARE(model.data(model.index(1), ConversationModel::StatsTextRole).toString(),
           QString("12 tokens \u00b7 40.5 tok/s \u00b7 first token 250 ms \u00b7 stop"));
  QCOMPARE(model.data(model.index(1), ConversationModel::SiblingCountRole).toInt(), 1);

  // Regenerate: a sibling of a1 becomes the leaf; the last row is replaced.
  const auto a2 = s.chats->add_message(chat, u1, store::Role::Assistant, "", store::MessageStatus::Streaming);
  model.sync();
  QCOMPARE(removed.count(), 1);
  QCOMPARE(inserted.count(), 1);
  QCOMPARE(model.rowCount(), 2);
  QCOMPARE(model.leafId(), a2);
  QCOMPARE(model.data(model.index(1), ConversationModel::SiblingIndexRole).toInt(), 1);
  QCOMPARE(model.data(model.index(1), ConversationModel::SiblingCountRole).toInt(), 2);
  QCOMPARE(model.data(model.index(1), ConversationModel::StatusRole).toString(), QString("streaming"));

  // Streamed text: one dataChanged per batch, on the reply's row only. Only live replies grow.
  changed.clear();
  model.appendText(a2, "ignored: not live");
  QCOMPARE(changed.count(), 0);
  model.beginLive(a2);
  s.chats->append_to_message(a2, "second ");
  model.appendText(a2, "second ");
  model.appendText(a2, "answer");  // not saved yet: the writer thread is behind
  QCOMPARE(changed.count(), 2);
  QCOMPARE(changed.at(0).at(0).value<QModelIndex>().row(), 1);
  QCOMPARE(model.data(model.index(1)).toString(), QString("second answer"));
  model.sync();  // the store is a batch behind: the row keeps what arrived
  QCOMPARE(changed.count(), 2);
  QCOMPARE(model.data(model.index(1)).toString(), QString("second answer"));
  s.chats->append_to_message(a2, "answer");
  s.chats->finish_message(a2, store::MessageStatus::Complete, R"({"tokens":2,"finish_reason":"stop"})");
  model.endLive(a2);  // re-read from the store: status and stats
  QCOMPARE(changed.count(), 3);
  QCOMPARE(model.data(model.index(1), ConversationModel::StatusRole).toString(), QString("complete"));
  QCOMPARE(model.data(model.index(1)).toString(), QString("second answer"));

  // Back to the first version through the store, as the "<" button does.
  s.chats->set_current_leaf(chat, s.chats->latest_leaf_under(a1));
  model.sync();
  QCOMPARE(model.leafId(), a1);
  QCOMPARE(model.data(model.index(1), ConversationModel::SiblingIndexRole).toInt(), 0);

  // Out-of-context marks change only the rows concerned.
  changed.clear();
  model.setOutOfContext({u1});
  QCOMPARE(changed.count(), 1);
  QCOMPARE(model.data(model.index(0), ConversationModel::InContextRole).toBool(), false);
  QCOMPARE(model.data(model.index(1), ConversationModel::InContextRole).toBool(), true);

  // Edit: a sibling of the (root) user message starts a new branch; both old rows go.
  const auto u2 = s.chats->add_message(chat, 0, store::Role::User, "first question, edited");
  model.sync();
  QCOMPARE(model.rowCount(), 1);
  QCOMPARE(model.leafId(), u2);
  QCOMPARE(model.data(model.index(0), ConversationModel::SiblingCountRole).toInt(), 2);

  model.setChat(0);
  QCOMPARE(model.rowCount(), 0);
}

void TestChatModels::samplingJsonIsValidated() {
  SamplingParams p = defaultChatSampling();
  p.temperature = 0.3f;
  p.top_k = 7;
  p.max_tokens = 99;
  p.seed = 1234;
  p.ignore_eos = true;
  QStringList problems;
  const SamplingParams back = samplingFromJson(samplingToJson(p), &problems);
  QVERIFY2(problems.isEmpty(), qPrintable(problems.join("; ")));
  QCOMPARE(back.temperature, 0.3f);
  QCOMPARE(back.top_k, 7);
  QCOMPARE(back.max_tokens, 99);
  QCOMPARE(back.seed.value_or(0), uint64_t{1234});
  QVERIFY(back.ignore_eos);

  const SamplingParams d = samplingFromJson("{}", &problems);
  QVERIFY(problems.isEmpty());
  QCOMPARE(d.max_tokens, defaultChatSampling().max_tokens);
  QVERIFY(!d.seed);

  // Untrusted text: wrong types and ranges fall back per field and are reported.
  const SamplingParams bad = samplingFromJson(
      R"({"temperature":"hot","top_p":2,"max_tokens":0,"top_k":3.5,"seed":-4,"min_p":0.2})", &problems);
  QCOMPARE(problems.size(), 5);
  QCOMPARE(bad.temperature, defaultChatSampling().temperature);
  QCOMPARE(bad.top_p, defaultChatSampling().top_p);
  QCOMPARE(bad.max_tokens, defaultChatSampling().max_tokens);
  QCOMPARE(bad.min_p, 0.2f);
  QVERIFY(!bad.seed);
  samplingFromJson("[1,2", &problems);
  QCOMPARE(problems.size(), 1);
  samplingFromJson(QString(5000, '[') + QString(5000, ']'), &problems);  // deep nesting: refused, no crash
  QCOMPARE(problems.size(), 1);
}

void TestChatModels::contextFitDropsOldestTurns() {
  // 4 turns of ~(60+3)*2 tokens each, a system prompt of 13 tokens, the last question 16.
  const auto conv = conversation_of(4, 50, /*system=*/true);
  const ContextFit all = fitToContext(conv, 1000, 100, count_chars);
  QVERIFY(all.ok);
  QCOMPARE(all.droppedTurns, 0);
  QVERIFY(all.notice.isEmpty());
  QCOMPARE(all.messages.size(), conv.size());

  const int full = all.promptTokens;
  const int turn = static_cast<int>(conv[1].content.size() + conv[2].content.size()) + 6;
  // Room for everything but one turn: exactly the oldest turn goes.
  const ContextFit one = fitToContext(conv, full - 1 + 100, 100, count_chars);
  QVERIFY(one.ok);
  QCOMPARE(one.droppedTurns, 1);
  QCOMPARE(one.droppedMessages, 2);
  QCOMPARE(one.promptTokens, full - turn);
  QCOMPARE(one.messages.front().role, QString("system"));  // the system prompt stays
  QCOMPARE(one.messages[1].content, conv[3].content);      // from the second turn on
  QCOMPARE(one.messages.back().content, QString("last question"));
  QVERIFY2(one.notice.contains("the oldest turn (2 messages"), qPrintable(one.notice));
  QVERIFY(one.notice.contains("question 0"));  // says which message went first

  // Only the system prompt and the last question fit.
  const int minimal = 13 + 16;
  const ContextFit most = fitToContext(conv, minimal + 100, 100, count_chars);
  QVERIFY(most.ok);
  QCOMPARE(most.droppedTurns, 4);
  QCOMPARE(most.messages.size(), size_t{2});
  QVERIFY(most.notice.contains("4 turns (8 messages"));

  // A regenerate: the conversation ends with the user message, the same rule holds.
  const auto no_system = conversation_of(3, 20, false);
  const ContextFit ns = fitToContext(no_system, 60 + 100, 100, count_chars);
  QVERIFY(ns.ok);
  QCOMPARE(ns.messages.front().role, QString("user"));
  QVERIFY(ns.promptTokens <= 60);
}

void TestChatModels::contextFitRefusesWhatCannotFit() {
  const auto conv = conversation_of(2, 10, true);
  const ContextFit tight = fitToContext(conv, 13 + 16 - 1 + 100, 100, count_chars);
  QVERIFY(!tight.ok);
  QVERIFY(tight.error.contains("last message does not fit"));
  const ContextFit max_tokens = fitToContext(conv, 100, 100, count_chars);
  QVERIFY(!max_tokens.ok);
  QVERIFY(max_tokens.error.contains("Max tokens"));
  const ContextFit failing = fitToContext(conv, 1000, 10, [](const std::vector<PromptMessage>&) {
    RenderedPrompt r;
    r.error = "template raised: roles must alternate";
    return r;
  });
  QVERIFY(!failing.ok);
  QVERIFY(failing.error.contains("roles must alternate"));
}

void TestChatModels::exportContainsTheBranchWithStats() {
  TempStore s;
  const auto chat = s.chats->create_chat("Export me", "Be brief.");
  const auto u = s.chats->add_message(chat, 0, store::Role::User, "What is `x`?");
  const auto a = s.chats->add_message(chat, u, store::Role::Assistant, "```cpp\nint x = 1;\n```");
  s.chats->finish_message(a, store::MessageStatus::Complete,
                          R"({"tokens":5,"tokens_per_s":10,"ttft_s":0.5,"finish_reason":"length"})");
  const auto other = s.chats->add_message(chat, u, store::Role::Assistant, "another branch");
  s.chats->set_current_leaf(chat, a);
  ChatExportInput in{s.chats->get_chat(chat), s.chats->path_to(a), s.chats->all_messages(chat), "tiny-chat"};

  const QString md = QString::fromUtf8(exportMarkdown(in));
  QVERIFY(md.startsWith("# Export me\n"));
  QVERIFY(md.contains("### System\n\nBe brief."));
  QVERIFY(md.contains("### User\n\nWhat is `x`?"));
  QVERIFY(md.contains("### Assistant\n\n```cpp\nint x = 1;\n```"));
  QVERIFY(md.contains("5 tokens \u00b7 10.0 tok/s \u00b7 first token 500 ms \u00b7 length"));
  QVERIFY(md.contains("model: tiny-chat"));
  QVERIFY(!md.contains("another branch"));
  QVERIFY2(md.contains("1 message of other branches"), qPrintable(md));  // says what it leaves out
  const QString all = QString::fromUtf8(exportMarkdownAllBranches(in));
  QVERIFY(all.contains("### Assistant (version 1 of 2)\n\n```cpp"));
  QVERIFY(all.contains("### Assistant (version 2 of 2)\n\nanother branch"));
  QVERIFY(all.indexOf("What is `x`?") < all.indexOf("another branch"));

  const QJsonDocument doc = QJsonDocument::fromJson(exportJson(in));
  QVERIFY(doc.isObject());
  const QJsonObject root = doc.object();
  QCOMPARE(root.value("format").toString(), QString("inferdesk-chat"));
  QCOMPARE(root.value("system_prompt").toString(), QString("Be brief."));
  const QJsonArray msgs = root.value("messages").toArray();
  QCOMPARE(msgs.size(), 3);  // every branch
  QCOMPARE(root.value("version").toInt(), 2);
  QCOMPARE(root.value("current_leaf").toInteger(), a);
  QCOMPARE(msgs[2].toObject().value("content").toString(), QString("another branch"));
  QCOMPARE(msgs[0].toObject().value("role").toString(), QString("user"));
  QVERIFY(msgs[0].toObject().value("parent_id").isNull());
  QCOMPARE(msgs[1].toObject().value("parent_id").toInteger(), u);
  QCOMPARE(msgs[1].toObject().value("stats").toObject().value("tokens").toInt(), 5);
  QCOMPARE(msgs[1].toObject().value("content").toString(), QString("```cpp\nint x = 1;\n```"));
  QVERIFY(other != a);

  const QString path = s.dir.path() + "/chat.md";
  const QByteArray bytes = exportMarkdown(in);
  QString error;
  QVERIFY(writeExportFile(path, bytes, &error));
  QFile f(path);
  QVERIFY(f.open(QIODevice::ReadOnly));
  QCOMPARE(f.readAll(), bytes);
  QVERIFY(!writeExportFile(s.dir.path() + "/missing/dir/chat.md", "x", &error));
  QVERIFY(error.contains("could not write"));
}

void TestChatModels::samplingPanelPresets() {
  TempStore s;
  SamplingPanel panel(*s.settings);
  QVERIFY(panel.presetNames().contains("Precise"));
  QVERIFY(panel.presetNames().contains("Balanced"));
  QCOMPARE(panel.presetBox()->currentText(), QString("Balanced"));  // the defaults match it
  QSignalSpy changed(&panel, &SamplingPanel::changed);
  QVERIFY(panel.applyPreset("Precise"));
  QCOMPARE(changed.count(), 1);
  QCOMPARE(panel.params().temperature, 0.2f);
  QCOMPARE(panel.presetBox()->currentText(), QString("Precise"));

  panel.temperatureBox()->setValue(1.3);  // a user edit
  QCOMPARE(changed.count(), 2);
  QCOMPARE(panel.presetBox()->currentText(), QString("Custom"));
  panel.maxTokensBox()->setValue(77);
  QCOMPARE(changed.count(), 3);
  // Save as…: a dialog wide enough for its title; a built-in name is refused, another one saved.
  panel.saveButton()->click();
  QInputDialog* ask = nullptr;
  QTRY_VERIFY((ask = panel.findChild<QInputDialog*>("presetNameDialog")) != nullptr);
  QVERIFY(ask->minimumWidth() >= ask->fontMetrics().horizontalAdvance(ask->windowTitle()) + 100);
  ask->setTextValue("Mine");
  ask->accept();
  QTRY_VERIFY(panel.findChild<QInputDialog*>("presetNameDialog") == nullptr);
  QVERIFY(s.settings->get_preset("Mine").has_value());
  const auto stored = s.settings->get_preset("Mine");
  QVERIFY(stored.has_value());
  const SamplingParams mine = samplingFromJson(QString::fromStdString(stored->json));
  QCOMPARE(mine.max_tokens, 77);
  QCOMPARE(mine.temperature, 1.3f);

  // Hidden fields set by the chat survive an applied preset.
  SamplingParams hidden = panel.params();
  hidden.ignore_eos = true;
  panel.setParams(hidden);
  QCOMPARE(changed.count(), 3);  // setParams is not a user change
  QVERIFY(panel.applyPreset("Mine"));
  QVERIFY(panel.params().ignore_eos);
  // The user's preset is deleted only after a confirmation: Cancel keeps it, Yes deletes it.
  QCOMPARE(panel.presetBox()->currentText(), QString("Mine"));
  QVERIFY(panel.deleteButton()->isEnabled());
  for (const bool confirm : {false, true}) {
    panel.deleteButton()->click();
    QMessageBox* box = nullptr;
    QTRY_VERIFY((box = panel.findChild<QMessageBox*>("deletePresetConfirmation")) != nullptr);
    QVERIFY(box->text().contains("Mine"));
    box->button(confirm ? QMessageBox::Yes : QMessageBox::Cancel)->click();
    QTRY_VERIFY(panel.findChild<QMessageBox*>("deletePresetConfirmation") == nullptr);
    QCOMPARE(panel.presetNames().contains("Mine"), !confirm);
  }
  QVERIFY(!s.settings->get_preset("Mine").has_value());
  QVERIFY(!panel.applyPreset("Mine"));

  // Built-in presets cannot be deleted or overwritten, and are there whatever the store holds.
  QSignalSpy errors(&panel, &SamplingPanel::errorOccurred);
  QVERIFY(panel.applyPreset("Greedy"));
  QCOMPARE(panel.presetBox()->currentText(), QString("Greedy"));
  QVERIFY(!panel.deleteButton()->isEnabled());
  QVERIFY(!panel.deletePreset("Greedy"));
  QVERIFY(!panel.savePreset("greedy"));
  QCOMPARE(errors.count(), 2);
  for (const auto& p : s.settings->list_presets()) s.settings->delete_preset(p.name);  // an old "seeded" store
  SamplingPanel again(*s.settings);
  for (const char* name : {"Balanced", "Precise", "Creative", "Greedy"}) QVERIFY(again.presetNames().contains(name));
  QVERIFY(again.applyPreset("Greedy"));
  QCOMPARE(again.params().temperature, 0.0f);
}

void TestChatModels::sendingWithoutModelSavesNothing() {
  TempStore s;
  AppContext ctx = s.context();
  ConversationModel conversation(*s.chats);
  ChatSession session(ctx, conversation);
  const auto chat = s.chats->create_chat(ChatSession::newChatTitle().toStdString());
  session.setChat(chat);
  QSignalSpy needed(&session, &ChatSession::modelNeeded);
  QVERIFY(!session.send("hello"));
  QCOMPARE(needed.count(), 1);
  QVERIFY(s.chats->all_messages(chat).empty());
  QVERIFY(!session.isGenerating());
  const ContextFit prompt = session.currentPrompt();
  QVERIFY(!prompt.ok);
  QVERIFY(prompt.error.contains("No model is loaded"));
}

void TestChatModels::markdownSplitsAtSafeBoundaries() {
  const QString para = "A paragraph of plain words that goes on for a while.\n\n";
  const QString fence = "```python\ndef f():\n\n    return 1\n```\n\n";  // a blank line inside
  const QString list = "- item\n\n  continued under the item\n\n";
  QString text;
  for (int i = 0; i < 6; ++i) text += para + fence + list;
  text += "last line without newline";

  const auto pieces = splitMarkdown(text, 60, 100000);
  QVERIFY(pieces.size() > 3);
  QString joined;
  for (const auto& p : pieces) joined += p.text;
  QCOMPARE(joined, text);
  for (size_t i = 0; i < pieces.size(); ++i) {
    const MarkdownPiece& p = pieces[i];
    QCOMPARE(p.text.count("```") % 2, 0);  // fences are never cut at block boundaries
    QVERIFY(p.prefix.isEmpty() && p.suffix.isEmpty());
    QVERIFY(!p.text.startsWith(" "));  // nor indented continuations
    if (i + 1 < pieces.size()) QVERIFY(p.text.size() >= 60);
  }
  // Appending text never moves an earlier cut.
  for (qsizetype n = 1; n < text.size(); n += 7) {
    const auto prefix = splitMarkdown(text.left(n), 60, 100000);
    for (size_t i = 0; i + 1 < prefix.size(); ++i) QCOMPARE(prefix[i].text, pieces[i].text);
  }
  QCOMPARE(splitMarkdown("", 60, 1000).size(), size_t{1});
  QCOMPARE(splitMarkdown(para + para, 1000, 5000).size(), size_t{1});

  // Without block boundaries: one long line is cut after spaces, a long code block at line
  // starts, reopened and closed so each piece still renders as code.
  QString line;
  for (int i = 0; i < 500; ++i) line += QString("word%1 ").arg(i);
  const auto words = splitMarkdown(line, 100, 400);
  QVERIFY(words.size() > 5);
  for (const auto& p : words) QVERIFY(p.text.size() <= 400 + 10);
  QString code = "```cpp\n";
  for (int i = 0; i < 200; ++i) code += QString("int x%1 = %1;\n").arg(i);
  code += "```\n";
  const auto blocks = splitMarkdown(code, 100, 400);
  QVERIFY(blocks.size() > 3);
  QCOMPARE(blocks[1].prefix, QString("```cpp\n"));
  QCOMPARE(blocks[0].suffix, QString("```\n"));
  QVERIFY(blocks.back().suffix.isEmpty());
  for (const auto& p : blocks) QCOMPARE(p.renderText().count("```"), 2);
  for (qsizetype n = 1; n < code.size(); n += 13) {
    const auto prefix = splitMarkdown(code.left(n), 100, 400);
    for (size_t i = 0; i + 1 < prefix.size(); ++i) QCOMPARE(prefix[i].text, blocks[i].text);
  }
}

// The user's Shift+Enter lines stay lines; inline code, wherever it sits, is set in a fixed-pitch
// font (every fragment, also the second and third of a paragraph).
void TestChatModels::markdownKeepsLineBreaksAndCodeFonts() {
  QCOMPARE(preserveLineBreaks("one\ntwo\n\nthree"), QString("one  \ntwo\n\nthree"));
  QCOMPARE(preserveLineBreaks("```\na\nb\n```\nc"), QString("```\na\nb\n```\nc"));  // code untouched
  MarkdownView view;
  view.resize(400, 100);
  view.setMarkdownText(preserveLineBreaks("first line\nsecond line"));
  QVERIFY2(view.toPlainText().contains(QRegularExpression("first line[\\n\\x{2028}]second line")),
           qPrintable(view.toPlainText()));
  view.setMarkdownText("first line\nsecond line");  // plain markdown joins them: the control
  QVERIFY(view.toPlainText().contains("first line second line"));

  const QString md = "Use `alpha` then **bold** and `beta`, then `gamma`.\n\n- a list with `delta`\n\n"
                     "# Heading `eps`\n\n> quoted `zeta`";
  view.setMarkdownText(md);
  QStringList mono;
  for (QTextBlock b = view.document()->begin(); b.isValid(); b = b.next())
    for (auto it = b.begin(); !it.atEnd(); ++it) {
      const QTextFragment f = it.fragment();
      const QStringList families = f.charFormat().fontFamilies().toStringList();
      if (!families.isEmpty() && QFontInfo(QFont(families.first())).fixedPitch()) mono << f.text();
    }
  // Where it fails, say which font the code got and what the font database holds.
  const QFontInfo code_font(fixedPitchFont());
  const QStringList all = QFontDatabase::families();
  const QString fonts = QString(" (code font %1, fixed pitch %2; %3 families, %4 fixed pitch)")
                            .arg(code_font.family())
                            .arg(code_font.fixedPitch())
                            .arg(all.size())
                            .arg(std::count_if(all.cbegin(), all.cend(),
                                               [](const QString& f) { return QFontDatabase::isFixedPitch(f); }));
  for (const char* word : {"alpha", "beta", "gamma", "delta", "eps", "zeta"})
    QVERIFY2(mono.contains(word), qPrintable(word + QString(" is not monospace: ") + mono.join(",") + fonts));
  QVERIFY(!mono.contains(" then "));
}

void TestChatModels::titlesAreFreeOfMarkdown() {
  QCOMPARE(plainTextOfMarkdown("**Bold** and `code` in _a_ [link](http://x) \n# Heading"),
           QString("Bold and code in a link Heading"));
  QCOMPARE(plainTextOfMarkdown("- item one\n- item two"), QString("item one item two"));
  QCOMPARE(plainTextOfMarkdown("```python\nprint(1)\n```"), QString("print(1)"));
  QCOMPARE(plainTextOfMarkdown("a_b_c stays"), QString("a_b_c stays"));
}

QTEST_MAIN(TestChatModels)
#include "test_chat_models.moc"
