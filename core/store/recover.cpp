// recover_into: copies the readable rows of a damaged database into a new one (see recover.h).
#include "core/store/recover.h"

#include <sqlite3.h>

#include <cctype>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include "core/store/store.h"
#include "core/util/error.h"

namespace inferdesk::store {
namespace {

constexpr std::int64_t kMinKey = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMaxKey = std::numeric_limits<std::int64_t>::max();

std::string quoted(const std::filesystem::path& p) { return std::string("'").append(p.string()).append("'"); }

// Our tables in the order that keeps most references pointing backwards, and the key of the
// WITHOUT ROWID ones ("" = a rowid table whose INTEGER PRIMARY KEY is `id`).
struct TableSpec {
  const char* name;
  const char* key;
  const char* label;  // for summary()
  int since;          // the schema version that added it
};
constexpr TableSpec kTables[] = {
    {"models", "", "models", 1},
    {"chats", "", "chats", 1},
    {"messages", "", "messages", 1},
    {"settings", "key", "settings", 1},
    {"sampling_presets", "name", "sampling presets", 1},
    {"endpoints", "", "endpoints", 2},
    {"bench_runs", "", "benchmark runs", 2},
    {"bench_points", "", "benchmark points", 2},
};

// A prepared statement that finalizes itself; no error checks (the callers look at each rc).
struct Stmt {
  Stmt(sqlite3* db, const std::string& sql) { rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr); }
  ~Stmt() { sqlite3_finalize(st); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  sqlite3_stmt* st = nullptr;
  int rc = SQLITE_OK;
};

// A path as the path part of an SQLite URI: %-escapes for everything but unreserved bytes and '/'.
std::string uri_path(const std::filesystem::path& path) {
  const std::string abs = std::filesystem::absolute(path).string();
  std::string out;
  for (const unsigned char c : abs) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      static const char* const kHex = "0123456789ABCDEF";
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// The damaged file, opened read-only: the recovery never writes to it.
class Source {
 public:
  explicit Source(const std::filesystem::path& path) : path_(path) {
    // Without a -wal there is nothing to replay, and immutable=1 keeps even a read-only
    // connection from creating -wal and -shm beside the file. With one, SQLite must read it.
    std::error_code ec;
    const bool has_log = std::filesystem::exists(path.string() + "-wal", ec) || ec;
    const std::string name = has_log ? path.string() : "file:" + uri_path(path) + "?immutable=1";
    const int rc = sqlite3_open_v2(name.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
    if (rc != SQLITE_OK)
      throw Error(ErrorCode::Io, "recovering " + quoted(path) + ": cannot open it (" + sqlite3_errstr(rc) + ")");
    sqlite3_extended_result_codes(db_, 1);
  }
  ~Source() { sqlite3_close_v2(db_); }
  Source(const Source&) = delete;
  Source& operator=(const Source&) = delete;
  sqlite3* db() const { return db_; }

  // One integer, or nullopt when it cannot be read.
  std::optional<std::int64_t> number(const std::string& sql) const {
    Stmt s(db_, sql);
    if (s.rc != SQLITE_OK || sqlite3_step(s.st) != SQLITE_ROW) return std::nullopt;
    return sqlite3_column_int64(s.st, 0);
  }
  // Throws unless the file is an InferDesk database this build can read; returns its version.
  int require_ours() const {
    const auto app_id = number("PRAGMA application_id");
    const auto version = number("PRAGMA user_version");
    const auto tables = number("SELECT count(*) FROM sqlite_schema");
    if (!app_id || !version || !tables)
      throw Error(ErrorCode::Format, "recovering " + quoted(path_) +
                                         ": nothing can be read from it (its first page, which lists the "
                                         "tables, is damaged or it is not a database). Restore a backup.");
    if (*app_id != kApplicationId)
      throw Error(ErrorCode::Format, "recovering " + quoted(path_) + ": it is not an InferDesk database");
    if (*version > kSchemaVersion)
      throw Error(ErrorCode::Unsupported, "recovering " + quoted(path_) +
                                              ": it was written by a newer InferDesk; recover it with that version");
    return static_cast<int>(*version);
  }
  bool has_table(const std::string& name) const {
    return number("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = '" + name + "'").value_or(0) > 0;
  }
  // The row count through any readable full index of the table (nullopt when none can count).
  std::optional<std::int64_t> count_by_index(const std::string& table) const {
    Stmt s(db_, "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = '" + table +
                    "' AND (sql IS NULL OR sql NOT LIKE '% WHERE %')");
    while (s.rc == SQLITE_OK && sqlite3_step(s.st) == SQLITE_ROW) {
      std::string index;  // the file's own name for it: quote it as an identifier
      for (const char* c = reinterpret_cast<const char*>(sqlite3_column_text(s.st, 0)); c && *c; ++c)
        index += *c == '"' ? std::string("\"\"") : std::string(1, *c);
      if (auto n = number("SELECT count(*) FROM \"" + table + "\" INDEXED BY \"" + index + "\"")) return n;
    }
    return std::nullopt;
  }

 private:
  std::filesystem::path path_;
  sqlite3* db_ = nullptr;
};

// Copies one table from the source into the new file, going round unreadable pages.
class TableCopier {
 public:
  TableCopier(const Source& src, Database& out, const TableSpec& spec, TableRecovery& r)
      : src_(src), out_(out), spec_(spec), r_(r) {}

  void copy() {
    const std::string cols = column_list();
    std::string marks;
    for (int i = 1; i <= columns_; ++i) marks += (i > 1 ? ", ?" : "?") + std::to_string(i);
    Stmt ins(out_.handle(), "INSERT INTO \"" + std::string(spec_.name) + "\"(" + cols + ") VALUES(" + marks + ")");
    if (ins.rc != SQLITE_OK) out_.fail(ins.rc, "saving the recovered data");
    insert_ = ins.st;
    const std::string from = " FROM \"" + std::string(spec_.name) + "\"";
    if (*spec_.key == '\0')
      copy_by_rowid("SELECT " + cols + from + " WHERE id >= ?1 ORDER BY id",
                    "SELECT id" + from + " WHERE id >= ?1 ORDER BY id LIMIT 1");
    else
      copy_from_both_ends(cols, from);
    account_for_losses();
  }

 private:
  // The new file's columns of the table (the source's must be the same: same schema version).
  std::string column_list() {
    Stmt s(out_.handle(), "SELECT name FROM pragma_table_info('" + std::string(spec_.name) + "') ORDER BY cid");
    std::string cols;
    while (s.rc == SQLITE_OK && sqlite3_step(s.st) == SQLITE_ROW) {
      const std::string name = reinterpret_cast<const char*>(sqlite3_column_text(s.st, 0));
      if (name == spec_.key) key_column_ = columns_;
      cols += (cols.empty() ? "\"" : ", \"") + name + "\"";
      ++columns_;
    }
    return cols;
  }

  // Steps `select` to its end or its first unreadable row, copying each row; `on_row` sees the
  // row before it is copied. Returns how many rows were read and whether it stopped on an error.
  std::pair<std::int64_t, bool> drain(sqlite3_stmt* select, const std::function<void()>& on_row) {
    std::int64_t read = 0;
    int rc = SQLITE_OK;
    while ((rc = sqlite3_step(select)) == SQLITE_ROW) {
      on_row();
      for (int i = 0; i < columns_; ++i) sqlite3_bind_value(insert_, i + 1, sqlite3_column_value(select, i));
      const int put = sqlite3_step(insert_);
      sqlite3_reset(insert_);
      sqlite3_clear_bindings(insert_);
      if ((put & 0xff) == SQLITE_CONSTRAINT) {
        ++rejected_;  // a garbled row that breaks the schema's rules
      } else if (put != SQLITE_DONE) {
        out_.fail(put, "saving the recovered data");
      }
      ++read;
    }
    sqlite3_reset(select);
    read_ += read;
    return {read, rc != SQLITE_DONE};
  }

  void copy_by_rowid(const std::string& select_sql, const std::string& probe_sql) {
    Stmt select(src_.db(), select_sql), probe(src_.db(), probe_sql);
    if (select.rc != SQLITE_OK || probe.rc != SQLITE_OK) {
      r_.damaged = true;  // the table's schema row is unreadable or does not fit
      return;
    }
    std::int64_t from = kMinKey, last = 0;
    for (;;) {
      sqlite3_bind_int64(select.st, 1, from);
      const auto [read, failed] = drain(select.st, [&] { last = sqlite3_column_int64(select.st, 0); });
      if (!failed) return;
      r_.damaged = true;
      if (read > 0 && last == kMaxKey) return;
      const std::int64_t start = read > 0 ? last + 1 : from;
      const auto next = first_readable(probe.st, start);
      if (!next) return;
      if (read == 0 && *next == from) {  // its key is readable but its contents are not: skip it
        if (*next == kMaxKey) return;
        from = *next + 1;
      } else {
        from = *next;
      }
    }
  }

  // The first rowid >= start that a seek can reach, past the unreadable pages after `start`:
  // seeks into a ruined page fail, seeks past it succeed, so double the distance until one
  // succeeds and then bisect for the nearest one. nullopt: nothing readable follows.
  static std::optional<std::int64_t> first_readable(sqlite3_stmt* probe, std::int64_t start) {
    std::int64_t found = 0;
    auto seek = [&](std::int64_t at) {  // 1 = a row, 0 = none at or after `at`, -1 = unreadable
      sqlite3_bind_int64(probe, 1, at);
      const int rc = sqlite3_step(probe);
      if (rc == SQLITE_ROW) found = sqlite3_column_int64(probe, 0);
      sqlite3_reset(probe);
      return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
    };
    int got = seek(start);
    if (got >= 0) return got == 1 ? std::optional(found) : std::nullopt;
    std::int64_t bad = start, good = start;
    for (std::uint64_t step = 1;; step *= 2) {
      if (step > static_cast<std::uint64_t>(kMaxKey - start)) return std::nullopt;
      good = start + static_cast<std::int64_t>(step);
      if (seek(good) >= 0) break;
      bad = good;
    }
    while (good - bad > 1) {
      const std::int64_t mid = bad + (good - bad) / 2;
      (seek(mid) >= 0 ? good : bad) = mid;
    }
    got = seek(good);
    return got == 1 ? std::optional(found) : std::nullopt;
  }

  // WITHOUT ROWID tables (settings, presets: a page or two) are read forwards, and after an
  // unreadable page backwards from the end down to the last key read.
  void copy_from_both_ends(const std::string& cols, const std::string& from) {
    const std::string key = "\"" + std::string(spec_.key) + "\"";
    Stmt forward(src_.db(), "SELECT " + cols + from + " ORDER BY " + key);
    Stmt backward(src_.db(),
                  "SELECT " + cols + from + " WHERE ?1 IS NULL OR " + key + " > ?1 ORDER BY " + key + " DESC");
    if (forward.rc != SQLITE_OK || backward.rc != SQLITE_OK) {
      r_.damaged = true;
      return;
    }
    std::optional<std::string> last;
    const auto keep_key = [&] {
      const auto* k = sqlite3_column_text(forward.st, key_column_);
      last = std::string(k != nullptr ? reinterpret_cast<const char*>(k) : "");
    };
    if (!drain(forward.st, keep_key).second) return;
    r_.damaged = true;
    if (last) sqlite3_bind_text(backward.st, 1, last->c_str(), -1, SQLITE_TRANSIENT);
    drain(backward.st, [] {});
  }

  void account_for_losses() {
    r_.recovered = read_ - rejected_;
    if (!r_.damaged) {
      r_.lost = rejected_;
      return;
    }
    const auto total = src_.count_by_index(spec_.name);
    r_.lost = total && *total >= read_ ? *total - read_ + rejected_ : -1;
  }

  const Source& src_;
  Database& out_;
  const TableSpec& spec_;
  TableRecovery& r_;
  sqlite3_stmt* insert_ = nullptr;
  int columns_ = 0;
  int key_column_ = 0;
  std::int64_t read_ = 0, rejected_ = 0;
};

// Runs one mending statement on the new file; returns the rows it changed.
int mend(Database& out, const char* sql) {
  out.exec(sql);
  return sqlite3_changes(out.handle());
}

TableRecovery* find(RecoveryReport& report, const std::string& name) {
  for (auto& t : report.tables)
    if (t.table == name) return &t;
  return nullptr;
}

// Makes the copied rows consistent (see recover.h) before the commit checks the foreign keys.
void mend_references(Database& out, RecoveryReport& report) {
  find(report, "chats")->mended += mend(
      out, "UPDATE chats SET model_id = NULL WHERE model_id NOT IN (SELECT id FROM models)");
  report.recreated_chats = mend(out, "INSERT INTO chats(id, title, current_leaf, created_at, updated_at) "
                                     "SELECT chat_id, 'Recovered chat', NULL, min(created_at), max(created_at) "
                                     "FROM messages WHERE chat_id NOT IN (SELECT id FROM chats) GROUP BY chat_id");
  // A chat made above shows its newest message, which has no children (a child is always newer).
  mend(out, "UPDATE chats SET current_leaf = (SELECT m.id FROM messages m WHERE m.chat_id = chats.id "
            "ORDER BY m.created_at DESC, m.id DESC LIMIT 1) WHERE current_leaf IS NULL AND title = 'Recovered chat'");
  find(report, "messages")->mended += mend(
      out, "UPDATE messages SET parent_id = NULL WHERE parent_id NOT IN (SELECT id FROM messages)");
  find(report, "chats")->mended += mend(out,
                                        "UPDATE chats SET current_leaf = (SELECT m.id FROM messages m "
                                        "WHERE m.chat_id = chats.id ORDER BY m.created_at DESC, m.id DESC LIMIT 1) "
                                        "WHERE current_leaf NOT IN (SELECT id FROM messages)");
  auto* points = find(report, "bench_points");
  const int dropped = mend(out, "DELETE FROM bench_points WHERE run_id NOT IN (SELECT id FROM bench_runs)");
  points->recovered -= dropped;
  if (points->lost >= 0) points->lost += dropped;
  Stmt check(out.handle(), "PRAGMA foreign_key_check");
  if (check.rc == SQLITE_OK && sqlite3_step(check.st) == SQLITE_ROW)
    throw Error(ErrorCode::Internal, "recovering: a reference in table " +
                                         std::string(reinterpret_cast<const char*>(sqlite3_column_text(check.st, 0))) +
                                         " was left dangling");
}

void remove_database_files(const std::filesystem::path& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path.string() + suffix, ec);
}

}  // namespace

const TableRecovery* RecoveryReport::table(const std::string& name) const {
  for (const auto& t : tables)
    if (t.table == name) return &t;
  return nullptr;
}

bool RecoveryReport::complete() const {
  for (const auto& t : tables)
    if (t.damaged || t.lost != 0) return false;
  return true;
}

std::string RecoveryReport::summary() const {
  std::string kept, lost;
  for (const auto& spec : kTables) {
    const TableRecovery* t = table(spec.name);
    if (t == nullptr) continue;
    if (t->recovered > 0) kept += (kept.empty() ? "" : ", ") + std::to_string(t->recovered) + " " + spec.label;
    if (t->lost != 0)
      lost += (lost.empty() ? "" : ", ") + (t->lost > 0 ? std::to_string(t->lost) : std::string("some")) + " " +
              spec.label;
  }
  std::string s = "Recovered " + (kept.empty() ? std::string("nothing") : kept) + ".";
  if (!lost.empty()) s += " Lost: " + lost + ".";
  if (recreated_chats > 0)
    s += " " + std::to_string(recreated_chats) + " chat(s) whose title was lost are named \"Recovered chat\".";
  return s;
}

RecoveryReport recover_into(const std::filesystem::path& damaged, const std::filesystem::path& target) {
  std::error_code ec;
  if (std::filesystem::exists(target, ec) || ec)
    throw Error(ErrorCode::InvalidArgument, "recovering " + quoted(damaged) + ": " + quoted(target) +
                                                " already exists; choose a new file for the recovered data");
  Source src(damaged);
  const int version = src.require_ours();
  RecoveryReport report;
  report.source = damaged;
  report.target = target;
  try {
    auto out = std::make_unique<Database>(target);
    {
      Database::Transaction tx(*out, "saving the recovered data");
      out->exec("PRAGMA defer_foreign_keys = ON");  // rows arrive before the rows they point to
      for (const auto& spec : kTables) {
        TableRecovery& r = report.tables.emplace_back();
        r.table = spec.name;
        r.present = src.has_table(spec.name);
        if (r.present) {
          TableCopier(src, *out, spec, r).copy();
        } else if (version >= spec.since) {  // its version had it: dropped, its rows unknown
          r.damaged = true;
          r.lost = -1;
        }
      }
      mend_references(*out, report);
      tx.commit();
    }
    out.reset();  // the last close checkpoints the log: one self-contained file
  } catch (...) {
    remove_database_files(target);
    throw;
  }
  return report;
}

std::filesystem::path free_sibling(const std::filesystem::path& path, const std::string& tag) {
  const auto folder = path.parent_path();
  const std::string stem = path.stem().string();
  std::error_code ec;
  for (int n = 1;; ++n) {
    std::string name = stem + "." + tag;  // appended piece by piece: GCC 12 warns on "-" + to_string
    if (n > 1) name.append("-").append(std::to_string(n));
    name += ".db";
    if (!std::filesystem::exists(folder / name, ec)) return folder / name;
  }
}

RecoveryReport recover_in_place(const std::filesystem::path& path) {
  const auto fresh = free_sibling(path, "recovered");
  RecoveryReport report = recover_into(path, fresh);
  const auto kept = free_sibling(path, "damaged");
  std::error_code ec;
  std::filesystem::rename(path, kept, ec);
  if (ec)
    throw Error(ErrorCode::Io, "recovering " + quoted(path) + ": the recovered data is in " + quoted(fresh) +
                                   " but the damaged file could not be renamed (" + ec.message() + ")");
  // Its log belongs with it: a -wal left under the old name would be replayed into the new file.
  for (const char* suffix : {"-wal", "-shm"}) {
    if (!std::filesystem::exists(path.string() + suffix, ec)) continue;
    std::filesystem::rename(path.string() + suffix, kept.string() + suffix, ec);
    if (!ec) continue;
    std::error_code back;
    std::filesystem::rename(kept, path, back);
    throw Error(ErrorCode::Io, "recovering " + quoted(path) + ": the recovered data is in " + quoted(fresh) +
                                   " but the damaged file's " + suffix + " could not be moved (" + ec.message() +
                                   "), so the damaged file keeps its name");
  }
  std::filesystem::rename(fresh, path, ec);
  if (ec)
    throw Error(ErrorCode::Io, "recovering " + quoted(path) + ": the recovered data is in " + quoted(fresh) +
                                   " (the damaged file is now " + quoted(kept) + ") but it could not be renamed (" +
                                   ec.message() + ")");
  report.source = kept;
  report.target = path;
  return report;
}

}  // namespace inferdesk::store
