#include "core/store/statement.h"

#include <sqlite3.h>

#include "core/util/error.h"

namespace inferdesk::store::detail {

Statement::Statement(const Database& db, const char* sql, std::string_view what) : db_(db), what_(what) {
  const int rc = sqlite3_prepare_v2(db.handle(), sql, -1, &stmt_, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt_);  // harmless on nullptr; its result repeats rc
    stmt_ = nullptr;
    db_.fail(rc, what_);
  }
}

Statement::~Statement() {
  // finalize() only repeats the error of the last step(), which step() already reported.
  sqlite3_finalize(stmt_);
}

Statement& Statement::bind(int index, std::int64_t value) {
  const int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK) db_.fail(rc, what_);
  return *this;
}

Statement& Statement::bind(int index, std::string_view text) {
  // A zero-length view may have a null data(); SQLite would store NULL for a null pointer.
  const char* data = text.data() != nullptr ? text.data() : "";
  const int rc = sqlite3_bind_text64(stmt_, index, data, static_cast<sqlite3_uint64>(text.size()), SQLITE_TRANSIENT,
                                     SQLITE_UTF8);
  if (rc != SQLITE_OK) db_.fail(rc, what_);
  return *this;
}

Statement& Statement::bind(int index, std::optional<std::int64_t> value) {
  return value ? bind(index, *value) : bind_null(index);
}

Statement& Statement::bind_null(int index) {
  const int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK) db_.fail(rc, what_);
  return *this;
}

Statement& Statement::bind_double(int index, std::optional<double> value) {
  if (!value) return bind_null(index);
  const int rc = sqlite3_bind_double(stmt_, index, *value);
  if (rc != SQLITE_OK) db_.fail(rc, what_);
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_.fail(rc, what_);
}

void Statement::run() {
  while (step()) {
  }
}

void Statement::reset() {
  // reset() returns the last step()'s error again; step() has already thrown it.
  sqlite3_reset(stmt_);
  const int rc = sqlite3_clear_bindings(stmt_);
  if (rc != SQLITE_OK) db_.fail(rc, what_);
}

bool Statement::is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

std::int64_t Statement::int64(int column) const { return sqlite3_column_int64(stmt_, column); }

std::optional<std::int64_t> Statement::optional_int64(int column) const {
  if (is_null(column)) return std::nullopt;
  return int64(column);
}

std::string Statement::text(int column) const {
  if (is_null(column)) return {};
  const unsigned char* p = sqlite3_column_text(stmt_, column);
  if (p == nullptr) db_.fail(SQLITE_NOMEM, what_);  // converting the value to text failed
  const int n = sqlite3_column_bytes(stmt_, column);
  return std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
}

std::optional<double> Statement::optional_double(int column) const {
  if (is_null(column)) return std::nullopt;
  return sqlite3_column_double(stmt_, column);
}

std::int64_t query_int(const Database& db, const char* sql, std::string_view what) {
  Statement s(db, sql, what);
  if (!s.step()) throw Error(ErrorCode::Internal, std::string(what) + ": no result from " + sql);
  const std::int64_t v = s.int64(0);
  s.run();
  return v;
}

int changes(const Database& db) { return sqlite3_changes(db.handle()); }

}  // namespace inferdesk::store::detail
