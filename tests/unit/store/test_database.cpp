// core/store: opening files — settings of the connection, versions and migrations, files that are
// not ours or not databases at all.
#include <fstream>
#include <random>
#include <string>

#include "tests/unit/store/store_test_util.h"

namespace inferdesk::store {
namespace {

using testing::contains;
using testing::error_of;
using testing::query_text;
using testing::raw_sql;
using testing::TempDir;

void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::string random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

TEST(Database, ANewFileIsWalFullSyncWithForeignKeysAtTheCurrentVersion) {
  TempDir dir;
  Database db(dir / "new.db");
  EXPECT_FALSE(db.read_only());
  EXPECT_EQ(db.read_only_reason(), "");
  EXPECT_EQ(db.file_version(), 0);
  EXPECT_EQ(db.schema_version(), kSchemaVersion);
  EXPECT_EQ(query_text(db, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(query_text(db, "PRAGMA synchronous"), "2");  // FULL
  EXPECT_EQ(query_text(db, "PRAGMA foreign_keys"), "1");
  EXPECT_EQ(query_text(db, "PRAGMA user_version"), std::to_string(kSchemaVersion));
  EXPECT_EQ(query_text(db, "PRAGMA application_id"), std::to_string(kApplicationId));
}

TEST(Database, WhatIsCommittedIsThereAfterReopening) {
  TempDir dir;
  std::int64_t chat = 0, msg = 0;
  {
    Database db(dir / "a.db");
    ChatStore chats(db);
    chat = chats.create_chat("kept");
    msg = chats.add_message(chat, 0, Role::User, "hello");
  }
  Database db(dir / "a.db");
  EXPECT_EQ(db.file_version(), kSchemaVersion);
  ChatStore chats(db);
  EXPECT_EQ(chats.get_chat(chat).current_leaf, msg);
  EXPECT_EQ(chats.get_message(msg).content, "hello");
}

TEST(Database, TwoConnectionsSeeEachOthersCommits) {
  TempDir dir;
  Database a(dir / "shared.db");
  Database b(dir / "shared.db");
  const auto chat = ChatStore(a).create_chat("from a");
  EXPECT_EQ(ChatStore(b).get_chat(chat).title, "from a");
}

TEST(Database, AZeroLengthFileIsAFreshDatabase) {
  TempDir dir;
  write_bytes(dir / "empty.db", "");
  Database db(dir / "empty.db");
  EXPECT_FALSE(db.read_only());
  EXPECT_EQ(db.schema_version(), kSchemaVersion);
  EXPECT_TRUE(ChatStore(db).list_chats().empty());
  ChatStore(db).create_chat("works");
}

TEST(Database, RandomBytesAreAFormatErrorNamingTheFile) {
  TempDir dir;
  const auto path = dir / "garbage.db";
  write_bytes(path, random_bytes(16384, 7));
  const Error e = error_of([&] { Database db(path); });
  EXPECT_EQ(e.code(), ErrorCode::Format);
  EXPECT_TRUE(contains(e.what(), path.string())) << e.what();
  EXPECT_EQ(std::filesystem::file_size(path), 16384u);  // and the file was left alone
}

TEST(Database, ADamagedPageIsAFormatErrorWhenRead) {
  TempDir dir;
  const auto path = dir / "damaged.db";
  {
    Database db(path);
    ChatStore chats(db);
    for (int i = 0; i < 50; ++i) {
      const auto c = chats.create_chat("chat " + std::to_string(i));
      chats.add_message(c, 0, Role::User, std::string(2000, 'x'));
    }
  }  // the last close checkpoints the log into the file
  ASSERT_GT(std::filesystem::file_size(path), 8 * 4096u);
  {
    std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    for (int page = 1; page < 8; ++page) {  // keep the header page, ruin the next ones
      f.seekp(page * 4096);
      f << random_bytes(4096, static_cast<unsigned>(page));
    }
  }
  const Error e = error_of([&] {
    Database db(path);
    ChatStore chats(db);
    for (const auto& c : chats.list_chats()) chats.all_messages(c.id);
  });
  EXPECT_EQ(e.code(), ErrorCode::Format) << e.what();
}

TEST(Database, AnotherProgramsSqliteFileIsRefused) {
  TempDir dir;
  const auto path = dir / "other.db";
  raw_sql(path, "CREATE TABLE bookmarks(url TEXT)");
  const Error e = error_of([&] { Database db(path); });
  EXPECT_EQ(e.code(), ErrorCode::Format);
  EXPECT_TRUE(contains(e.what(), "another program")) << e.what();
  raw_sql(path, "DROP TABLE bookmarks; PRAGMA application_id = 1234");
  EXPECT_EQ(error_of([&] { Database db(path); }).code(), ErrorCode::Format);
}

TEST(Database, OurFileWithATableMissingIsAFormatError) {
  TempDir dir;
  const auto path = dir / "dropped.db";
  { Database db(path); }
  raw_sql(path, "DROP TABLE sampling_presets");
  const Error e = error_of([&] { Database db(path); });
  EXPECT_EQ(e.code(), ErrorCode::Format);
  EXPECT_TRUE(contains(e.what(), "missing")) << e.what();
}

TEST(Database, AnEmptyOldVersionFileMigrates) {
  // Version 0 is "no schema yet": a valid SQLite file without tables (e.g. left by a crash
  // before the first migration committed). It must be upgraded, not refused.
  TempDir dir;
  const auto path = dir / "v0.db";
  raw_sql(path, "CREATE TABLE t(x); DROP TABLE t;");
  ASSERT_GT(std::filesystem::file_size(path), 0u);
  Database db(path);
  EXPECT_EQ(db.file_version(), 0);
  EXPECT_EQ(db.schema_version(), kSchemaVersion);
  EXPECT_EQ(query_text(db, "PRAGMA user_version"), std::to_string(kSchemaVersion));
  EXPECT_EQ(query_text(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'messages'"), "1");
}

TEST(Database, AFileFromANewerVersionOpensReadOnlyWithAReason) {
  TempDir dir;
  const auto path = dir / "future.db";
  std::int64_t chat = 0;
  {
    Database db(path);
    chat = ChatStore(db).create_chat("written by the future");
    // What a newer build would do: a new table and a higher version.
    db.exec("CREATE TABLE future_things(x); PRAGMA user_version = " + std::to_string(kSchemaVersion + 1));
  }
  Database db(path);
  EXPECT_TRUE(db.read_only());
  EXPECT_TRUE(contains(db.read_only_reason(), "newer")) << db.read_only_reason();
  EXPECT_EQ(db.file_version(), kSchemaVersion + 1);
  ChatStore chats(db);
  EXPECT_EQ(chats.get_chat(chat).title, "written by the future");  // still readable

  const Error e = error_of([&] { chats.create_chat("x"); });
  EXPECT_EQ(e.code(), ErrorCode::Io);
  EXPECT_TRUE(contains(e.what(), path.string())) << e.what();
  EXPECT_TRUE(contains(e.what(), "newer")) << e.what();
  EXPECT_EQ(error_of([&] { Settings(db).set("k", "v"); }).code(), ErrorCode::Io);
  EXPECT_EQ(error_of([&] { ModelRegistry(db).add("/m", "m"); }).code(), ErrorCode::Io);
  // Even SQL that bypasses the stores cannot write: the connection itself is read-only.
  EXPECT_EQ(error_of([&] { db.exec("DELETE FROM chats"); }).code(), ErrorCode::Io);
  EXPECT_EQ(chats.mark_interrupted_streams(), 0);
  EXPECT_EQ(query_text(db, "PRAGMA user_version"), std::to_string(kSchemaVersion + 1));
}

TEST(Database, ReadOnlyOnRequestReadsButNeverWritesOrCreates) {
  TempDir dir;
  const auto path = dir / "ro.db";
  Database::Options ro;
  ro.read_only = true;
  {
    Database writer(path);
    ChatStore(writer).create_chat("existing");
  }
  Database db(path, ro);
  EXPECT_TRUE(db.read_only());
  EXPECT_EQ(ChatStore(db).list_chats().size(), 1u);
  EXPECT_EQ(error_of([&] { ChatStore(db).create_chat("no"); }).code(), ErrorCode::Io);
  EXPECT_EQ(error_of([&] { Database missing(dir / "missing.db", ro); }).code(), ErrorCode::Io);
  EXPECT_FALSE(std::filesystem::exists(dir / "missing.db"));
}

TEST(Database, AMissingFolderIsAnIoErrorNamingTheFile) {
  TempDir dir;
  const auto path = dir / "no-such-folder" / "x.db";
  const Error e = error_of([&] { Database db(path); });
  EXPECT_EQ(e.code(), ErrorCode::Io);
  EXPECT_TRUE(contains(e.what(), path.string())) << e.what();
}

}  // namespace
}  // namespace inferdesk::store
