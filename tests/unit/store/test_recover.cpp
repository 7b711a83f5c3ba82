// core/store: recover_into / recover_in_place — what a damaged file still holds goes into a new,
// consistent file; the damaged one is never written.
#include <set>
#include <string>

#include "core/store/recover.h"
#include "tests/unit/store/damage_util.h"
#include "tests/unit/store/store_test_util.h"

namespace inferdesk::store {
namespace {

using testing::error_of;
using testing::file_bytes;
using testing::has_wal_or_shm;
using testing::make_populated;
using testing::query_text;
using testing::raw_sql;
using testing::ruin_child;
using testing::TempDir;

constexpr int kChats = 60;
constexpr int kMessages = 3 * kChats;

// Opens the recovered file as the app would and checks that it is whole and consistent.
void expect_sound(const std::filesystem::path& path) {
  Database db(path);  // quick_check and the tables at open
  EXPECT_EQ(query_text(db, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(query_text(db, "SELECT count(*) FROM pragma_foreign_key_check"), "0");
  ChatStore chats(db);
  for (const auto& c : chats.list_chats()) {
    if (c.current_leaf == 0) continue;
    const auto path_shown = chats.path_to(c.current_leaf);
    ASSERT_FALSE(path_shown.empty());
    EXPECT_EQ(path_shown.back().chat_id, c.id);
    EXPECT_TRUE(chats.children(c.current_leaf).empty()) << "chat " << c.id << " shows a message with replies";
  }
}

TEST(Recover, ARuinedMessagesPageLosesOnlyItsRows) {
  TempDir dir;
  const auto path = dir / "ruined.db";
  make_populated(path, kChats);
  ruin_child(path, "messages", 2);
  const std::string before = file_bytes(path);

  const RecoveryReport report = recover_into(path, dir / "new.db");
  EXPECT_TRUE(file_bytes(path) == before) << "the damaged file was changed";
  EXPECT_FALSE(has_wal_or_shm(path));
  EXPECT_FALSE(has_wal_or_shm(dir / "new.db"));
  EXPECT_FALSE(report.complete());
  const TableRecovery* m = report.table("messages");
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(m->damaged);
  EXPECT_GT(m->lost, 0);  // counted through an intact index
  EXPECT_LT(m->lost, 30);
  EXPECT_EQ(m->recovered + m->lost, kMessages);
  EXPECT_EQ(report.table("chats")->recovered, kChats);
  EXPECT_FALSE(report.table("chats")->damaged);
  EXPECT_EQ(report.table("settings")->recovered, 1);
  EXPECT_EQ(report.table("sampling_presets")->recovered, 1);
  EXPECT_EQ(report.table("models")->recovered, 1);
  EXPECT_NE(report.summary().find(std::to_string(m->lost) + " messages"), std::string::npos) << report.summary();

  expect_sound(dir / "new.db");
  Database db(dir / "new.db");
  EXPECT_EQ(query_text(db, "SELECT count(*) FROM messages"), std::to_string(m->recovered));
  EXPECT_EQ(query_text(db, "SELECT count(*) FROM chats"), std::to_string(kChats));
  EXPECT_EQ(Settings(db).get_or("theme", ""), "dark");
  // Every recovered message still has its whole text.
  EXPECT_EQ(query_text(db, "SELECT count(*) FROM messages WHERE length(content) >= 300"), std::to_string(m->recovered));
}

TEST(Recover, AReplyWhoseParentIsLostBecomesARoot) {
  TempDir dir;
  const auto path = dir / "chain.db";
  {
    Database db(path);
    ChatStore chats(db);
    const auto c = chats.create_chat("one long chat");
    std::int64_t m = 0;
    for (int i = 0; i < 120; ++i)
      m = chats.add_message(c, m, i % 2 ? Role::Assistant : Role::User, std::string(300, 'm'));
  }
  ruin_child(path, "messages", 2);

  const RecoveryReport report = recover_into(path, dir / "new.db");
  const TableRecovery* m = report.table("messages");
  EXPECT_GT(m->lost, 0);
  EXPECT_EQ(m->mended, 1);  // the first message after the lost ones
  expect_sound(dir / "new.db");
  Database db(dir / "new.db");
  ChatStore chats(db);
  const auto chat = chats.list_chats().at(0);
  EXPECT_EQ(chats.roots(chat.id).size(), 2u);
  // The chat still shows its newest message, through the part of the chain after the damage.
  const auto shown = chats.path_to(chat.current_leaf);
  EXPECT_EQ(shown.back().id, 120);
  EXPECT_EQ(shown.front().id, chats.roots(chat.id)[1].id);
}

TEST(Recover, ARuinedIndexPageLosesNothing) {
  TempDir dir;
  const auto path = dir / "index.db";
  make_populated(path, kChats);
  ruin_child(path, "messages_by_chat", 0);

  const RecoveryReport report = recover_into(path, dir / "new.db");
  EXPECT_TRUE(report.complete()) << report.summary();
  EXPECT_EQ(report.table("messages")->recovered, kMessages);
  expect_sound(dir / "new.db");
}

TEST(Recover, MessagesWhoseChatIsLostGetARecoveredChat) {
  TempDir dir;
  const auto path = dir / "chats.db";
  make_populated(path, kChats);
  ruin_child(path, "chats", 1);

  const RecoveryReport report = recover_into(path, dir / "new.db");
  const TableRecovery* c = report.table("chats");
  EXPECT_TRUE(c->damaged);
  EXPECT_GT(c->lost, 0);
  EXPECT_EQ(c->recovered + c->lost, kChats);
  EXPECT_EQ(report.recreated_chats, c->lost);
  EXPECT_EQ(report.table("messages")->recovered, kMessages);  // none of them was on that page
  expect_sound(dir / "new.db");
  Database db(dir / "new.db");
  EXPECT_EQ(query_text(db, "SELECT count(*) FROM chats WHERE title = 'Recovered chat' AND current_leaf IS NOT NULL"),
            std::to_string(c->lost));
}

TEST(Recover, ATableWithoutRowidIsReadFromBothEnds) {
  TempDir dir;
  const auto path = dir / "settings.db";
  make_populated(path, 3);
  {
    Database db(path);
    for (int i = 0; i < 100; ++i) Settings(db).set("key" + std::to_string(1000 + i), std::string(200, 's'));
  }
  ruin_child(path, "settings", 1);

  const RecoveryReport report = recover_into(path, dir / "new.db");
  const TableRecovery* s = report.table("settings");
  EXPECT_TRUE(s->damaged);
  EXPECT_EQ(s->lost, -1);  // no index to count it by
  EXPECT_GT(s->recovered, 30);
  EXPECT_LT(s->recovered, 101);
  EXPECT_NE(report.summary().find("some settings"), std::string::npos) << report.summary();
  Database db(dir / "new.db");
  // Both ends survived: the first and the last key.
  EXPECT_TRUE(Settings(db).get("key1000").has_value());
  EXPECT_TRUE(Settings(db).get("theme").has_value());
}

TEST(Recover, AMissingTableIsReportedAndTheRestIsKept) {
  TempDir dir;
  const auto path = dir / "dropped.db";
  make_populated(path, 5);
  raw_sql(path, "DROP TABLE sampling_presets");
  const RecoveryReport report = recover_into(path, dir / "new.db");
  EXPECT_FALSE(report.table("sampling_presets")->present);
  EXPECT_TRUE(report.table("sampling_presets")->damaged);
  EXPECT_FALSE(report.complete());
  EXPECT_NE(report.summary().find("some sampling presets"), std::string::npos) << report.summary();
  EXPECT_EQ(report.table("messages")->recovered, 15);
  expect_sound(dir / "new.db");
}

TEST(Recover, AnOlderVersionsFileComesBackInTheCurrentSchema) {
  TempDir dir;
  const auto path = dir / "v1.db";
  make_populated(path, 5);
  raw_sql(path, "DROP TABLE bench_points; DROP TABLE bench_runs; DROP TABLE endpoints; PRAGMA user_version = 1;");
  const RecoveryReport report = recover_into(path, dir / "new.db");
  EXPECT_TRUE(report.complete()) << report.summary();  // version 1 had no endpoints: nothing lost
  EXPECT_FALSE(report.table("endpoints")->present);
  Database db(dir / "new.db");
  EXPECT_EQ(db.file_version(), kSchemaVersion);
  EXPECT_EQ(ChatStore(db).list_chats().size(), 5u);
  EXPECT_TRUE(BenchStore(db).list().empty());
}

TEST(Recover, InPlaceKeepsTheDamagedFileBesideTheNewOne) {
  TempDir dir;
  const auto path = dir / "inferdesk.db";
  make_populated(path, kChats);
  ruin_child(path, "messages", 1);
  const std::string before = file_bytes(path);

  const RecoveryReport report = recover_in_place(path);
  EXPECT_EQ(report.source, dir / "inferdesk.damaged.db");
  EXPECT_EQ(report.target, path);
  EXPECT_TRUE(file_bytes(report.source) == before);
  EXPECT_FALSE(std::filesystem::exists(dir / "inferdesk.recovered.db"));
  expect_sound(path);
  EXPECT_EQ(ChatStore(*std::make_unique<Database>(path)).list_chats().size(), std::size_t(kChats));
  // A second recovery of the kept file does not overwrite the first one's names.
  EXPECT_EQ(free_sibling(path, "damaged"), dir / "inferdesk.damaged-2.db");
}

TEST(Recover, NeverOverwritesAndRefusesFilesNotOurs) {
  TempDir dir;
  const auto path = dir / "a.db";
  make_populated(path, 2);
  raw_sql(dir / "taken.db", "CREATE TABLE x(y)");
  const std::string taken = file_bytes(dir / "taken.db");
  EXPECT_EQ(error_of([&] { recover_into(path, dir / "taken.db"); }).code(), ErrorCode::InvalidArgument);
  EXPECT_TRUE(file_bytes(dir / "taken.db") == taken);
  EXPECT_EQ(error_of([&] { recover_into(dir / "taken.db", dir / "new.db"); }).code(), ErrorCode::Format);
  EXPECT_FALSE(std::filesystem::exists(dir / "new.db"));
}

}  // namespace
}  // namespace inferdesk::store
