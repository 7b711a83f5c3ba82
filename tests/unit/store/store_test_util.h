// Helpers shared by the core/store tests: a temporary folder and a deterministic clock.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "core/store/store.h"
#include "core/util/error.h"

namespace inferdesk::store::testing {

// A fresh folder under /tmp (mode 0755 so a child that drops to an unprivileged user can enter
// it), removed with everything in it at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string templ = "/tmp/inferdesk-store-XXXXXX";
    if (mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = templ;
    ::chmod(path_.c_str(), 0755);
  }
  ~TempDir() {
    std::error_code ec;
    // Give write permission back to folders a test made read-only, then remove everything.
    for (auto it = std::filesystem::recursive_directory_iterator(path_, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
      if (it->is_directory(ec)) ::chmod(it->path().c_str(), 0755);
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// A clock that advances 10 ms per reading, so every timestamp is distinct and ordered.
inline Database::Options ticking_clock() {
  Database::Options o;
  auto t = std::make_shared<std::int64_t>(1'700'000'000'000);
  o.clock = [t] { return *t += 10; };
  return o;
}

// Runs SQL on its own raw connection (for building files by hand); fails the test on error.
inline void raw_sql(const std::filesystem::path& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  const std::string message = err ? err : "";
  sqlite3_free(err);
  EXPECT_EQ(sqlite3_close(db), SQLITE_OK);
  ASSERT_EQ(rc, SQLITE_OK) << message;
}

// One text value from a query on the store's own connection.
inline std::string query_text(const Database& db, const std::string& sql) {
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db.handle(), sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sql;
  std::string out;
  if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != nullptr)
    out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  return out;
}

// Calls fn and returns the inferdesk::Error it throws; fails the test if it throws nothing.
template <typename Fn>
Error error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no inferdesk::Error was thrown";
  return Error(ErrorCode::Internal, "<nothing thrown>");
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace inferdesk::store::testing
