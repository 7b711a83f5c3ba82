// core/store: damaged files — a table missing or a page ruined — are refused at open without a
// byte written.
#include <string>
#include <vector>

#include "tests/unit/store/damage_util.h"
#include "tests/unit/store/store_test_util.h"

namespace inferdesk::store {
namespace {

using testing::contains;
using testing::error_of;
using testing::file_bytes;
using testing::has_wal_or_shm;
using testing::make_populated;
using testing::raw_sql;
using testing::ruin_child;
using testing::TempDir;

// The DamagedDatabase that fn throws; fails the test when it throws something else or nothing.
template <typename Fn>
DamagedDatabase damaged_of(Fn&& fn) {
  try {
    fn();
  } catch (const DamagedDatabase& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a DamagedDatabase: " << e.what();
    return DamagedDatabase({}, {}, e.what());
  }
  ADD_FAILURE() << "nothing was thrown";
  return DamagedDatabase({}, {}, "<nothing thrown>");
}

TEST(Damage, AMissingTableIsRefusedWithoutWritingAByte) {
  // A file in rollback-journal mode (as another tool leaves it): switching it to WAL would
  // rewrite its header and create -wal and -shm beside it.
  TempDir dir;
  const auto path = dir / "dropped.db";
  make_populated(path, 3);
  raw_sql(path, "PRAGMA journal_mode = DELETE; DROP TABLE sampling_presets;");
  const std::string before = file_bytes(path);
  ASSERT_FALSE(has_wal_or_shm(path));

  const DamagedDatabase e = damaged_of([&] { Database db(path); });
  EXPECT_EQ(e.code(), ErrorCode::Format);
  EXPECT_EQ(e.path(), path);
  EXPECT_TRUE(contains(e.what(), "missing")) << e.what();
  EXPECT_TRUE(contains(e.what(), "sampling_presets")) << e.what();
  EXPECT_EQ(e.problems(), std::vector<std::string>{"table 'sampling_presets' is missing"});
  EXPECT_TRUE(file_bytes(path) == before) << "the refused file was changed";
  EXPECT_FALSE(has_wal_or_shm(path));
}

TEST(Damage, AnOldFileWithATableMissingIsRefusedBeforeItsUpgrade) {
  // A version-1 file would get version 2's tables (a write) before the check.
  TempDir dir;
  const auto path = dir / "v1.db";
  make_populated(path, 3);
  raw_sql(path, "PRAGMA journal_mode = DELETE; DROP TABLE bench_points; DROP TABLE bench_runs; "
                "DROP TABLE endpoints; DROP TABLE settings; PRAGMA user_version = 1;");
  const std::string before = file_bytes(path);

  const Error e = error_of([&] { Database db(path); });
  EXPECT_EQ(e.code(), ErrorCode::Format);
  EXPECT_TRUE(contains(e.what(), "settings")) << e.what();
  EXPECT_TRUE(file_bytes(path) == before) << "the refused file was changed";
  EXPECT_FALSE(has_wal_or_shm(path));
}

TEST(Damage, AWalFileWithATableMissingLeavesNoLogBehind) {
  TempDir dir;
  const auto path = dir / "wal.db";
  make_populated(path, 3);
  raw_sql(path, "DROP TABLE models;");
  const std::string before = file_bytes(path);
  EXPECT_EQ(error_of([&] { Database db(path); }).code(), ErrorCode::Format);
  EXPECT_TRUE(file_bytes(path) == before);
  EXPECT_FALSE(has_wal_or_shm(path));
}

TEST(Damage, ARuinedTablePageIsRefusedAtOpen) {
  TempDir dir;
  const auto path = dir / "ruined.db";
  make_populated(path);
  ruin_child(path, "messages", 2);
  const std::string before = file_bytes(path);

  // Nothing would be read from that page until some chat's messages are shown.
  const DamagedDatabase e = damaged_of([&] { Database db(path); });
  EXPECT_EQ(e.code(), ErrorCode::Format) << e.what();
  EXPECT_FALSE(e.problems().empty());
  EXPECT_TRUE(contains(e.what(), path.string())) << e.what();
  EXPECT_TRUE(contains(e.what(), "damaged")) << e.what();
  EXPECT_TRUE(file_bytes(path) == before);
  EXPECT_FALSE(has_wal_or_shm(path));
}

TEST(Damage, ARuinedIndexPageIsRefusedAtOpen) {
  TempDir dir;
  const auto path = dir / "index.db";
  make_populated(path);
  ruin_child(path, "messages_by_chat", 0);
  const DamagedDatabase e = damaged_of([&] { Database db(path); });
  EXPECT_EQ(e.code(), ErrorCode::Format) << e.what();
}

TEST(Damage, TheCheckCanBeLeftOutForASecondConnection) {
  TempDir dir;
  const auto path = dir / "index.db";
  make_populated(path);
  ruin_child(path, "messages_by_chat", 0);
  Database::Options unchecked;
  unchecked.check_integrity = false;
  Database db(path, unchecked);
  EXPECT_FALSE(db.read_only());  // opened: the damage shows only when that index is read
}

TEST(Damage, AnotherProgramsFileSaysWhatToDoWithoutAFileNameToChoose) {
  // The app has no file name to choose: the user can only move the file or use another folder.
  TempDir dir;
  const auto path = dir / "other.db";
  raw_sql(path, "CREATE TABLE bookmarks(url TEXT)");
  const Error e = error_of([&] { Database db(path); });
  EXPECT_EQ(e.code(), ErrorCode::Format);
  EXPECT_FALSE(contains(e.what(), "file name")) << e.what();
  EXPECT_TRUE(contains(e.what(), "another folder")) << e.what();
}

}  // namespace
}  // namespace inferdesk::store
