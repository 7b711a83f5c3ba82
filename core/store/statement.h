// Internal to core/store: a prepared SQLite statement whose every result code is checked and
// turned into inferdesk::Error through Database::fail().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/store/store.h"

struct sqlite3_stmt;

namespace inferdesk::store::detail {

class Statement {
 public:
  // `what` says what the statement is for ("saving a message"); it goes into error messages.
  Statement(const Database& db, const char* sql, std::string_view what);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are 1-based, as in SQL (?1, ?2, ...).
  Statement& bind(int index, std::int64_t value);
  Statement& bind(int index, std::string_view text);
  Statement& bind(int index, std::optional<std::int64_t> value);  // nullopt binds NULL
  Statement& bind_null(int index);
  Statement& bind_double(int index, std::optional<double> value);  // nullopt binds NULL

  // Advances: true when a row is available, false when done. Throws on any error.
  bool step();
  // Steps a statement that returns no rows.
  void run();
  // Clears the previous execution so the statement can run again with new bindings.
  void reset();

  bool is_null(int column) const;
  std::int64_t int64(int column) const;
  std::optional<std::int64_t> optional_int64(int column) const;
  std::string text(int column) const;
  std::optional<double> optional_double(int column) const;

 private:
  const Database& db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string what_;
};

// Rows changed by the last INSERT/UPDATE/DELETE on this connection.
int changes(const Database& db);

// Runs one writing statement with parameters ?1, ?2, ... bound to args, in its own transaction
// (a savepoint inside a caller's), and returns how many rows it changed.
template <typename... Args>
int write_one(Database& db, std::string_view what, const char* sql, const Args&... args) {
  Database::Transaction tx(db, what);
  Statement s(db, sql, what);
  int index = 0;
  (s.bind(++index, args), ...);
  s.run();
  const int n = changes(db);
  tx.commit();
  return n;
}

// Runs a statement that yields one integer (e.g. "PRAGMA user_version").
std::int64_t query_int(const Database& db, const char* sql, std::string_view what);

}  // namespace inferdesk::store::detail
