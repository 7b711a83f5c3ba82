// Start-up with a database that cannot be opened: the dialog (Recover into a new file / Choose
// another folder / Quit, and how to use another folder from the command line) and the loop that
// acts on the choice, with scripted answers over real files made by our store.
#include <QPushButton>
#include <QTemporaryDir>
#include <QtTest>

#include <sqlite3.h>

#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "core/store/store.h"
#include "gui/app/app_paths.h"
#include "gui/app/database_problem_dialog.h"

using namespace inferdesk;
using namespace inferdesk::gui;

namespace {

std::string bytesOf(const QString& path) {
  std::ifstream in(path.toStdString(), std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A real database of ours with 20 chats, then garbage over the root page of the index
// messages_by_chat (quick_check fails; no row is on that page, so recovery loses nothing).
void makeDamaged(const QString& path) {
  std::int64_t root = 0, page_size = 0;
  {
    store::Database db(path.toStdString());
    store::ChatStore chats(db);
    for (int i = 0; i < 20; ++i) {
      const auto c = chats.create_chat("chat " + std::to_string(i));
      chats.add_message(c, chats.add_message(c, 0, store::Role::User, "q"), store::Role::Assistant, "a");
    }
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db.handle(),
                       "SELECT rootpage, (SELECT page_size FROM pragma_page_size) FROM sqlite_schema "
                       "WHERE name = 'messages_by_chat'",
                       -1, &st, nullptr);
    if (sqlite3_step(st) == SQLITE_ROW) {
      root = sqlite3_column_int64(st, 0);
      page_size = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
  }
  QVERIFY(root > 1);
  std::mt19937 rng(7);
  std::string junk(std::size_t(page_size), '\0');
  for (auto& c : junk) c = char(rng() & 0xff);
  std::fstream f(path.toStdString(), std::ios::binary | std::ios::in | std::ios::out);
  f.seekp(std::streamoff(root - 1) * page_size);
  f.write(junk.data(), std::streamsize(junk.size()));
}

// Opens the database in a folder the way the app does (the session's first step).
void openStore(const QString& dir) { store::Database db(database_path(dir).toStdString()); }

struct Script {
  QList<DatabaseChoice> answers;  // one per failure, in order
  QString folder;                 // what Choose another folder picks
  QStringList asked, told;        // the errors shown, the notices shown
  QList<bool> recoverable;
  StartupPrompts prompts() {
    StartupPrompts p;
    p.ask = [this](const QString&, const QString& error, bool can_recover) {
      asked << error;
      recoverable << can_recover;
      return answers.isEmpty() ? DatabaseChoice::Quit : answers.takeFirst();
    };
    p.choose_folder = [this](const QString&) { return folder; };
    p.inform = [this](const QString&, const QString& text) { told << text; };
    return p;
  }
};

}  // namespace

class TestDatabaseProblem : public QObject {
  Q_OBJECT

 private slots:
  void theDialogOffersRecoverAnotherFolderAndQuit() {
    DatabaseProblemDialog dialog("/data/inferdesk.db",
                                 "opening the database: '/data/inferdesk.db' is damaged (SQLite's check found: "
                                 "Page 7: btreeInitPage() returns error code 11). The file was not changed.",
                                 true);
    QVERIFY(dialog.recoverButton() != nullptr);
    QCOMPARE(dialog.recoverButton()->text(), QString("Recover into a new file"));
    QVERIFY(dialog.folderButton()->text().startsWith("Choose another folder"));
    QCOMPARE(dialog.quitButton()->text(), QString("Quit"));
    // The text says which file, what is wrong, where the original will be, and how to use
    // another folder both ways (there is no file name to choose).
    QVERIFY2(dialog.text().contains("/data/inferdesk.db is damaged"), qPrintable(dialog.text()));
    QVERIFY(dialog.text().contains("Page 7"));
    QVERIFY(dialog.text().contains("inferdesk.damaged.db"));
    QVERIFY(dialog.text().contains("--data-dir DIR"));
    QVERIFY(!dialog.text().contains("file name"));
    dialog.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dialog));
    QVERIFY(dialog.grab().save(QString(INFERDESK_SCREENSHOT_DIR) + "/database_problem_dialog.png"));
    dialog.recoverButton()->click();
    QCOMPARE(dialog.choice(), DatabaseChoice::Recover);
    QCOMPARE(dialog.result(), int(QDialog::Accepted));

    DatabaseProblemDialog again("/data/inferdesk.db", "x", true);
    again.show();
    again.folderButton()->click();
    QCOMPARE(again.choice(), DatabaseChoice::ChooseFolder);
    DatabaseProblemDialog quit("/data/inferdesk.db", "x", true);
    quit.show();
    quit.quitButton()->click();
    QCOMPARE(quit.choice(), DatabaseChoice::Quit);
    QCOMPARE(quit.result(), int(QDialog::Rejected));
  }

  void aFileThatIsNotOursGetsNoRecoverButton() {
    DatabaseProblemDialog dialog("/data/inferdesk.db", "not InferDesk's", false);
    QVERIFY(dialog.recoverButton() == nullptr);
    QVERIFY(dialog.text().contains("cannot open its data in /data"));
    QVERIFY(dialog.text().contains("--data-dir DIR"));
  }

  void recoveringADamagedDatabaseOpensWhatItHeld() {
    QTemporaryDir tmp;
    const QString db = database_path(tmp.path());
    makeDamaged(db);
    const std::string before = bytesOf(db);
    Script s;
    s.answers = {DatabaseChoice::Recover};
    QCOMPARE(open_data_folder(tmp.path(), openStore, s.prompts()), tmp.path());
    QCOMPARE(s.asked.size(), 1);
    QCOMPARE(s.recoverable, QList<bool>{true});
    QVERIFY2(s.asked[0].contains("damaged"), qPrintable(s.asked[0]));
    QCOMPARE(s.told.size(), 1);
    QVERIFY2(s.told[0].contains("Recovered 20 chats, 40 messages"), qPrintable(s.told[0]));
    // The original is kept beside the new file, byte for byte.
    const QString kept = tmp.path() + "/inferdesk.damaged.db";
    QVERIFY(s.told[0].contains(kept));
    QVERIFY(bytesOf(kept) == before);
    store::Database reopened(db.toStdString());
    QCOMPARE(store::ChatStore(reopened).list_chats().size(), std::size_t(20));
  }

  void choosingAnotherFolderOpensThere() {
    QTemporaryDir tmp, other;
    const QString db = database_path(tmp.path());
    {
      sqlite3* raw = nullptr;
      QCOMPARE(sqlite3_open(db.toUtf8().constData(), &raw), SQLITE_OK);
      sqlite3_exec(raw, "CREATE TABLE bookmarks(url TEXT)", nullptr, nullptr, nullptr);
      sqlite3_close(raw);
    }
    Script s;
    s.answers = {DatabaseChoice::ChooseFolder};
    s.folder = other.path() + "/sub";
    QCOMPARE(open_data_folder(tmp.path(), openStore, s.prompts()), s.folder);
    QCOMPARE(s.recoverable, QList<bool>{false});  // not ours: nothing to recover
    QVERIFY2(s.asked[0].contains("another folder"), qPrintable(s.asked[0]));
    QVERIFY(QFileInfo::exists(database_path(s.folder)));
  }

  void quitLeavesTheFileAsItWas() {
    QTemporaryDir tmp;
    const QString db = database_path(tmp.path());
    makeDamaged(db);
    const std::string before = bytesOf(db);
    Script s;
    s.answers = {DatabaseChoice::ChooseFolder, DatabaseChoice::Quit};  // a cancelled folder choice asks again
    QCOMPARE(open_data_folder(tmp.path(), openStore, s.prompts()), QString());
    QCOMPARE(s.asked.size(), 2);
    QVERIFY(bytesOf(db) == before);
    QVERIFY(!QFileInfo::exists(db + "-wal"));
    QVERIFY(!QFileInfo::exists(tmp.path() + "/inferdesk.damaged.db"));
  }
};

QTEST_MAIN(TestDatabaseProblem)
#include "test_database_problem.moc"
