// Database: opening, identity and version checks, migrations, transactions, and the mapping from
// SQLite result codes to inferdesk::Error.
#include <sqlite3.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "core/store/schema.h"
#include "core/store/statement.h"
#include "core/store/store.h"
#include "core/util/error.h"

namespace inferdesk::store {
namespace {

using detail::query_int;

std::string quoted(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

// What the user can do about an I/O failure (rc is an extended result code).
const char* io_hint(int rc) {
  switch (rc) {
    case SQLITE_READONLY_DIRECTORY:
    case SQLITE_READONLY_CANTINIT:
    case SQLITE_READONLY_CANTLOCK:
      return "The folder that holds it must be writable too: SQLite keeps its -wal and -shm "
             "files beside the database.";
    default: break;
  }
  switch (rc & 0xff) {
    case SQLITE_FULL: return "The disk is full: free some space and try again.";
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return "Another program (or another InferDesk window) is writing to it: try again.";
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_CANTOPEN:
    case SQLITE_AUTH: return "Check that the folder and the file exist and that you may write to them.";
    default: return "Check the disk and the file's permissions.";
  }
}

}  // namespace

Database::Database(const std::filesystem::path& path) : Database(path, Options{}) {}

Database::Database(const std::filesystem::path& path, Options options) : path_(path) {
  try {
    open(std::move(options));
  } catch (...) {
    sqlite3_close_v2(db_);  // the constructor failed: nothing else will release the handle
    db_ = nullptr;
    throw;
  }
}

Database::~Database() {
  // SQLITE_OK is the only result for a connection whose statements are all finalized (ours
  // are: each Statement finalizes itself); close_v2 never leaves the handle half-closed.
  sqlite3_close_v2(db_);
}

std::int64_t Database::now_ms() const {
  if (clock_) return clock_();
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

void Database::fail(int rc, std::string_view what) const {
  const int primary = rc & 0xff;
  std::string reason = sqlite3_errstr(rc);
  if (db_ != nullptr && sqlite3_extended_errcode(db_) == rc) reason = sqlite3_errmsg(db_);
  const std::string head = std::string(what) + ": ";
  switch (primary) {
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_AUTH:
    case SQLITE_PROTOCOL:
      throw Error(ErrorCode::Io, head + "could not use the database " + quoted(path_) + " (" + reason + "). " +
                                     (opened_ ? "Nothing saved before was lost. " : "The file was not changed. ") +
                                     io_hint(rc));
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_FORMAT:
      throw Error(ErrorCode::Format, head + quoted(path_) + " is not a readable InferDesk database (" + reason +
                                         "). Move it aside to start a new one, or restore a backup.");
    case SQLITE_NOMEM: throw Error(ErrorCode::OutOfMemory, head + "SQLite ran out of memory");
    case SQLITE_TOOBIG:
    case SQLITE_CONSTRAINT: throw Error(ErrorCode::InvalidArgument, head + "refused by the database (" + reason + ")");
    default:
      // SQLITE_ERROR and friends: our SQL does not fit the file. With a file from a newer
      // version that is the file's doing; otherwise it is ours.
      if (schema_version_ > kSchemaVersion)
        throw Error(ErrorCode::Format, head + quoted(path_) +
                                           " has a newer layout this version "
                                           "cannot read (" +
                                           reason + ")");
      throw Error(ErrorCode::Internal, head + "SQLite error on " + quoted(path_) + ": " + reason);
  }
}

void Database::require_writable(std::string_view what) const {
  if (!read_only()) return;
  throw Error(ErrorCode::Io, std::string(what) + ": the database " + quoted(path_) +
                                 " is open read-only, so this was not saved. " + read_only_reason_);
}

void Database::exec(const std::string& sql) {
  char* message = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message);
  sqlite3_free(message);  // the same text is still available from sqlite3_errmsg
  if (rc != SQLITE_OK) fail(rc, "running SQL");
}

void Database::open(Options options) {
  clock_ = std::move(options.clock);
  const int flags = options.read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  int rc = sqlite3_open_v2(path_.c_str(), &db_, flags, nullptr);
  if (db_ == nullptr) fail(SQLITE_NOMEM, "opening the database");
  if (rc != SQLITE_OK) fail(rc, "opening the database");
  if ((rc = sqlite3_extended_result_codes(db_, 1)) != SQLITE_OK) fail(rc, "opening the database");
  if ((rc = sqlite3_busy_timeout(db_, options.busy_timeout_ms)) != SQLITE_OK) fail(rc, "opening the database");

  // Everything up to configure_writable() only reads, so a refused file is left byte for byte.
  // The first read of the file: random bytes fail here with SQLITE_NOTADB.
  file_version_ = static_cast<int>(query_int(*this, "PRAGMA user_version", "reading the database"));
  schema_version_ = file_version_;
  check_identity();
  exec("PRAGMA foreign_keys = ON");
  if (options.check_integrity) check_integrity();
  if (file_version_ >= 1 && file_version_ <= kSchemaVersion) check_tables(file_version_);

  if (file_version_ > kSchemaVersion) {
    read_only_reason_ = "It was written by a newer InferDesk (data version " + std::to_string(file_version_) +
                        "; this version understands up to " + std::to_string(kSchemaVersion) +
                        "), so it is open read-only to keep it intact. Update InferDesk to "
                        "change it.";
    if (!options.read_only) {  // reopen so that not even SQLite itself can write
      sqlite3_close_v2(db_);
      db_ = nullptr;
      Options again;
      again.read_only = true;
      again.busy_timeout_ms = options.busy_timeout_ms;
      again.check_integrity = false;  // just checked
      again.clock = std::move(clock_);
      open(std::move(again));  // sets read_only_reason_ again
    }
    opened_ = true;
    return;
  }

  const bool file_protected = sqlite3_db_readonly(db_, "main") == 1;
  if (options.read_only || file_protected) {
    read_only_reason_ = options.read_only ? "It was opened read-only on request."
                                          : "The file is write-protected: change its permissions to save.";
    if (file_version_ < kSchemaVersion)
      throw Error(ErrorCode::Io, "opening the database: " + quoted(path_) + " needs an upgrade to data version " +
                                     std::to_string(kSchemaVersion) + " but cannot be written. " + read_only_reason_);
    opened_ = true;
    return;
  }
  configure_writable();
  migrate();
  opened_ = true;
}

void Database::check_tables(int version) {
  // A file that says it is at a version but lacks that version's tables was damaged by something
  // else; better to say so now, before a migration writes to it, than on the first query.
  // Version 2 added the dashboard's tables.
  static const char* const kV1Tables[] = {"models", "chats", "messages", "settings", "sampling_presets"};
  static const char* const kV2Tables[] = {"endpoints", "bench_runs", "bench_points"};
  std::vector<std::string> missing;
  auto look_for = [&](const char* name) {
    detail::Statement s(*this, "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?1",
                        "reading the database");
    s.bind(1, std::string_view(name));
    if (!s.step()) missing.push_back(name);
  };
  for (const char* name : kV1Tables) look_for(name);
  if (version >= 2)
    for (const char* name : kV2Tables) look_for(name);
  if (missing.empty()) return;
  std::string list;
  std::vector<std::string> problems;
  for (const auto& name : missing) {
    list += (list.empty() ? "'" : ", '") + name + "'";
    problems.push_back("table '" + name + "' is missing");
  }
  throw DamagedDatabase(path_, std::move(problems),
                        "opening the database: " + quoted(path_) + " is damaged: InferDesk's table" +
                            (missing.size() > 1 ? "s " : " ") + list + (missing.size() > 1 ? " are" : " is") +
                            " missing (removed outside InferDesk). The file was not changed. Recover what it still "
                            "holds into a new file, move it aside to start a new one, or restore a backup.");
}

void Database::check_integrity() {
  // quick_check reads every page and checks each b-tree's structure (not index contents, which
  // only integrity_check compares): a ruined page is found now, not when a chat is opened.
  std::vector<std::string> problems;
  sqlite3_stmt* st = nullptr;
  int rc = sqlite3_prepare_v2(db_, "PRAGMA quick_check(20)", -1, &st, nullptr);
  while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    const auto* line = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    std::string text = line != nullptr ? line : "";
    const std::string header = "*** in database main ***\n";  // the same on every first line
    if (text.rfind(header, 0) == 0) text.erase(0, header.size());
    if (text != "ok") problems.push_back(text);
    rc = SQLITE_OK;
  }
  if (rc == SQLITE_DONE) rc = SQLITE_OK;
  const int primary = rc & 0xff;
  if (primary == SQLITE_CORRUPT) problems.push_back(sqlite3_errmsg(db_));
  sqlite3_finalize(st);
  if (rc != SQLITE_OK && primary != SQLITE_CORRUPT) fail(rc, "checking the database");
  if (problems.empty()) return;
  throw DamagedDatabase(path_, problems,
                        "opening the database: " + quoted(path_) + " is damaged (SQLite's check found: " +
                            problems.front() + (problems.size() > 1 ? ", and more" : "") +
                            "). The file was not changed. Recover what is still readable into a new file, "
                            "or restore a backup.");
}

void Database::check_identity() {
  const auto app_id = query_int(*this, "PRAGMA application_id", "reading the database");
  if (app_id == kApplicationId) return;
  const bool ours_but_new = app_id == 0 && file_version_ == 0 &&
                            query_int(*this, "SELECT count(*) FROM sqlite_schema", "reading the database") == 0;
  if (ours_but_new) return;
  // The user cannot pick the database's name, only where it lives: say so.
  throw Error(ErrorCode::Format, "opening the database: " + quoted(path_) +
                                     " is an SQLite database of another program, not InferDesk's, and was "
                                     "left as it is. Move it out of that folder, or keep InferDesk's data in "
                                     "another folder.");
}

void Database::configure_writable() {
  // WAL: readers never block the writer and a commit is one append + fsync of the log.
  // synchronous=FULL: that fsync happens at every commit, so a returned write survives power loss.
  detail::Statement wal(*this, "PRAGMA journal_mode = WAL", "opening the database");
  if (!wal.step()) throw Error(ErrorCode::Internal, "opening the database: journal_mode returned no row");
  // A file system without shared memory keeps the old journal mode; that is still durable.
  wal.run();
  exec("PRAGMA synchronous = FULL");
}

void Database::migrate() {
  for (int version = file_version_ + 1; version <= kSchemaVersion; ++version) {
    Transaction tx(*this, "upgrading the database");
    // Another process may have migrated between our read and our write lock.
    const auto now = query_int(*this, "PRAGMA user_version", "upgrading the database");
    if (now >= version) continue;
    exec(detail::migration_sql(version));
    exec("PRAGMA application_id = " + std::to_string(kApplicationId));
    exec("PRAGMA user_version = " + std::to_string(version));
    tx.commit();
  }
  schema_version_ = kSchemaVersion;
}

Database::Transaction::Transaction(Database& db, std::string_view what)
    : db_(db), what_(what), depth_(db.tx_depth_ + 1) {
  db_.require_writable(what_);
  const std::string sql = depth_ == 1 ? "BEGIN IMMEDIATE" : "SAVEPOINT s" + std::to_string(depth_);
  const int rc = sqlite3_exec(db_.db_, sql.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) db_.fail(rc, what_);
  db_.tx_depth_ = depth_;
}

Database::Transaction::~Transaction() {
  if (!done_) rollback();
}

void Database::Transaction::commit() {
  const std::string sql = depth_ == 1 ? "COMMIT" : "RELEASE s" + std::to_string(depth_);
  const int rc = sqlite3_exec(db_.db_, sql.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) db_.fail(rc, what_);  // still open: the destructor rolls it back
  done_ = true;
  db_.tx_depth_ = depth_ - 1;
}

void Database::Transaction::rollback() noexcept {
  done_ = true;
  db_.tx_depth_ = depth_ - 1;
  // SQLite may already have rolled the whole transaction back itself (disk full, I/O error);
  // then there is nothing left to undo and a ROLLBACK would only report "no transaction".
  if (sqlite3_get_autocommit(db_.db_)) return;
  const std::string sql = depth_ == 1
                              ? "ROLLBACK"
                              : "ROLLBACK TO s" + std::to_string(depth_) + "; RELEASE s" + std::to_string(depth_);
  // A failed rollback cannot be reported from a destructor; SQLite then rolls the transaction
  // back when the connection closes or at the next BEGIN's failure, and the file stays intact.
  (void)sqlite3_exec(db_.db_, sql.c_str(), nullptr, nullptr, nullptr);
}

}  // namespace inferdesk::store
