// Export and import of chats: the JSON export of a branched chat imported into another database
// comes back exactly (every branch, the current leaf, statuses, statistics, times, system prompt,
// sampling) and exports again to the same document; version 1 files (one branch) still import;
// broken or hostile files are refused with a reason and leave nothing behind.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <functional>
#include <map>
#include <memory>

#include "core/store/store.h"
#include "gui/chat/chat_export.h"
#include "gui/chat/chat_import.h"
#include "gui/chat/sampling_json.h"

using namespace inferdesk;
using namespace inferdesk::gui;

namespace {

struct Store {
  QTemporaryDir dir;
  std::int64_t now;
  std::unique_ptr<store::Database> db;
  std::unique_ptr<store::ChatStore> chats;
  explicit Store(std::int64_t start) : now(start) {
    store::Database::Options o;
    o.clock = [this] { return now += 1000; };
    db = std::make_unique<store::Database>((dir.path() + "/t.db").toStdString(), o);
    chats = std::make_unique<store::ChatStore>(*db);
  }
};

// A chat with two root versions, two replies to the first, a follow-up and an error reply.
std::int64_t branched_chat(store::ChatStore& c) {
  SamplingParams p = defaultChatSampling();
  p.temperature = 0.3f;
  p.seed = 42;
  const auto chat = c.create_chat("Branched **chat**", "Answer in French.", samplingToJson(p).toStdString());
  const auto u1 = c.add_message(chat, 0, store::Role::User, "Hello\nthere");
  const auto a1 = c.add_message(chat, u1, store::Role::Assistant, "Bonjour", store::MessageStatus::Streaming);
  c.finish_message(a1, store::MessageStatus::Stopped, R"({"finish_reason":"cancelled","tokens":2})");
  const auto a2 = c.add_message(chat, u1, store::Role::Assistant, "Salut !");
  c.finish_message(a2, store::MessageStatus::Complete,
                   R"({"finish_reason":"stop","tokens":3,"tokens_per_s":41.5,"ttft_s":0.02})");
  const auto u1b = c.add_message(chat, 0, store::Role::User, "Hi (edited)");
  c.add_message(chat, u1b, store::Role::Assistant, "Coucou");
  const auto u2 = c.add_message(chat, a2, store::Role::User, "`code` and more");
  const auto a4 = c.add_message(chat, u2, store::Role::Assistant, "partial", store::MessageStatus::Streaming);
  c.finish_message(a4, store::MessageStatus::Error, R"({"finish_reason":"error","error":"out of memory"})");
  c.set_current_leaf(chat, a4);
  return chat;
}

// The export with ids replaced by positions and the export time dropped: equal for equal chats.
QJsonObject normalised(const QByteArray& json) {
  QJsonObject root = QJsonDocument::fromJson(json).object();
  root.remove("exported_at");
  QJsonArray msgs = root.value("messages").toArray();
  std::map<qint64, int> position;
  for (int i = 0; i < msgs.size(); ++i) position[msgs[i].toObject().value("id").toInteger()] = i;
  for (int i = 0; i < msgs.size(); ++i) {
    QJsonObject m = msgs[i].toObject();
    m.insert("id", i);
    if (!m.value("parent_id").isNull()) m.insert("parent_id", position.at(m.value("parent_id").toInteger()));
    msgs[i] = m;
  }
  root.insert("messages", msgs);
  root.insert("current_leaf", position.at(root.value("current_leaf").toInteger()));
  return root;
}

// role/content/status/stats/time of every message, depth first with siblings in the store's order
// (stats as a JSON object: the store keeps it as opaque text, and an import writes it compactly).
QString tree_of(const store::ChatStore& c, std::int64_t chat) {
  QString out;
  std::function<void(const std::vector<store::Message>&, int)> walk = [&](const std::vector<store::Message>& ms,
                                                                          int depth) {
    for (const auto& m : ms) {
      out += QString("%1%2|%3|%4|%5|%6\n")
                 .arg(QString(depth, ' '), store::to_string(m.role), QString::fromStdString(m.content),
                      store::to_string(m.status),
                      QString::fromUtf8(QJsonDocument::fromJson(QByteArray::fromStdString(m.stats_json))
                                            .toJson(QJsonDocument::Compact)))
                 .arg(m.created_at);
      walk(c.children(m.id), depth + 1);
    }
  };
  walk(c.roots(chat), 0);
  return out;
}

QStringList path_of(const store::ChatStore& c, std::int64_t chat) {
  QStringList out;
  for (const auto& m : c.path_to(c.get_chat(chat).current_leaf)) out << QString::fromStdString(m.content);
  return out;
}

}  // namespace

class TestChatTransfer : public QObject {
  Q_OBJECT

 private slots:
  void jsonRoundTripRestoresTheWholeTree() {
    Store a(1'700'000'000'000), b(1'800'000'000'000);
    const auto chat = branched_chat(*a.chats);
    const QByteArray exported = exportJson(readChatForExport(*a.chats, chat, "tiny-chat"));
    const ChatImportResult r = importChatJson(*b.chats, exported, b.db->now_ms());
    QVERIFY2(r.ok, qPrintable(r.error));
    QCOMPARE(r.messages, 7);
    const store::Chat original = a.chats->get_chat(chat), copy = b.chats->get_chat(r.chat_id);
    QCOMPARE(copy.title, original.title);
    QCOMPARE(copy.system_prompt, original.system_prompt);
    QCOMPARE(copy.sampling_json, original.sampling_json);
    QCOMPARE(copy.created_at, original.created_at);
    QCOMPARE(copy.updated_at, original.updated_at);
    QCOMPARE(tree_of(*b.chats, r.chat_id), tree_of(*a.chats, chat));
    QCOMPARE(path_of(*b.chats, r.chat_id), path_of(*a.chats, chat));
    QCOMPARE(path_of(*b.chats, r.chat_id).last(), QString("partial"));
    // Exporting the copy gives the same document (ids aside).
    const QByteArray again = exportJson(readChatForExport(*b.chats, r.chat_id, "tiny-chat"));
    QCOMPARE(normalised(again), normalised(exported));
    // And the import can be repeated: a second, separate chat.
    const ChatImportResult r2 = importChatJson(*b.chats, exported, b.db->now_ms());
    QVERIFY(r2.ok);
    QVERIFY(r2.chat_id != r.chat_id);
    QCOMPARE(b.chats->list_chats().size(), size_t{2});
  }

  void fileImportAndVersionOne() {
    Store a(1'700'000'000'000);
    const QString path = a.dir.path() + "/chat.json";
    const auto chat = branched_chat(*a.chats);
    QString error;
    QVERIFY(writeExportFile(path, exportJson(readChatForExport(*a.chats, chat, {})), &error));
    const ChatImportResult r = importChatFile(*a.chats, path, a.db->now_ms());
    QVERIFY2(r.ok, qPrintable(r.error));
    QCOMPARE(tree_of(*a.chats, r.chat_id), tree_of(*a.chats, chat));
    // Version 1 (what earlier builds wrote): the branch shown, parents optional.
    const QByteArray v1 = R"({"format":"inferdesk-chat","version":1,"title":"Old","system_prompt":"",
      "sampling":{},"messages":[{"id":5,"role":"user","content":"q","status":"complete",
      "created_at":"2024-01-02T03:04:05.006Z"},{"id":6,"role":"assistant","content":"a",
      "status":"streaming","created_at":"2024-01-02T03:04:06.000Z","stats":{"tokens":1}}]})";
    const ChatImportResult old = importChatJson(*a.chats, v1, a.db->now_ms());
    QVERIFY2(old.ok, qPrintable(old.error));
    QCOMPARE(path_of(*a.chats, old.chat_id), (QStringList{"q", "a"}));
    const auto msgs = a.chats->path_to(a.chats->get_chat(old.chat_id).current_leaf);
    QCOMPARE(msgs[0].created_at, qint64(1704164645006));
    QCOMPARE(msgs[1].status, store::MessageStatus::Stopped);  // nothing streams into an import
    QCOMPARE(msgs[1].stats_json, std::string(R"({"tokens":1})"));
  }

  void brokenFilesAreRefusedWithAReason() {
    Store s(1'700'000'000'000);
    const QByteArray head = R"({"format":"inferdesk-chat","version":2,"title":"t","messages":)";
    const std::vector<std::pair<QByteArray, QString>> cases = {
        {"not json at all", "not JSON"},
        {"[1,2]", "not an exported chat"},
        {R"({"format":"something-else","version":2,"messages":[]})", "not an InferDesk chat export"},
        {R"({"format":"inferdesk-chat","version":7,"messages":[]})", "version 7"},
        {R"({"format":"inferdesk-chat","version":2,"messages":{}})", "\"messages\" must be a list"},
        {head + R"([{"id":1,"parent_id":9,"role":"user","content":"x"}]})", "parent 9 is not in the file"},
        {head + R"([{"id":1,"role":"user","content":"x"},{"id":1,"role":"user","content":"y"}]})", "appears twice"},
        {head +
             R"([{"id":1,"parent_id":2,"role":"user","content":"x"},{"id":2,"parent_id":1,"role":"user","content":"y"}]})",
         "cycle"},
        {head + R"([{"id":1,"role":"wizard","content":"x"}]})", "unknown message role"},
        {head + R"([{"id":1.5,"role":"user","content":"x"}]})", "must be an integer"},
        {head + R"([{"id":1,"role":"user"}]})", "\"content\" is missing"},
        {head + R"([{"id":1,"role":"user","content":"x","created_at":"yesterday"}]})", "not an ISO 8601 time"},
        {head + R"([{"id":1,"role":"user","content":"x"}],"current_leaf":3})", "\"current_leaf\" 3"},
        {QByteArray(5000, '[') + QByteArray(5000, ']'), "not JSON"},  // nesting beyond the parser's limit
    };
    for (const auto& [json, reason] : cases) {
      const ChatImportResult r = importChatJson(*s.chats, json, s.db->now_ms());
      QVERIFY2(!r.ok, json.left(80).constData());
      QVERIFY2(r.error.contains(reason), qPrintable(r.error + " | expected: " + reason));
    }
    QVERIFY(s.chats->list_chats().empty());
    const ChatImportResult missing = importChatFile(*s.chats, s.dir.path() + "/nope.json", 0);
    QVERIFY(!missing.ok);
    QVERIFY(missing.error.contains("could not read"));
  }
};

QTEST_MAIN(TestChatTransfer)
#include "test_chat_transfer.moc"
