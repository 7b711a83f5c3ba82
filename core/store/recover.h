// core/store: saving what is still readable from a damaged InferDesk database (DamagedDatabase)
// into a new file with the current schema. The damaged file is only read.
//
// SQLite's own .recover lives in the sqlite3 shell and its recover extension, not in the library
// Debian ships, so this copies table by table, row by row: a rowid table is read in rowid order,
// and past a page that cannot be read the next readable rowid is found by probing (doubling, then
// bisecting); a WITHOUT ROWID table is read from both ends. Rows whose parent did not survive are
// mended so the new file is consistent: a message whose parent is lost becomes a root, messages
// whose chat is lost get a chat titled "Recovered chat", a chat whose shown message is lost shows
// its newest one, a lost model is unset, benchmark points whose run is lost are dropped.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace inferdesk::store {

struct TableRecovery {
  std::string table;
  bool present = true;         // false: the file has no such table (missing, or an older version)
  bool damaged = false;        // some of its pages could not be read, or its version had it and it is gone
  std::int64_t recovered = 0;  // rows now in the new file
  // Rows known to be lost: unreadable (counted through an intact index of the table), refused
  // by the schema's constraints, or dropped because their parent row was lost. -1 = unknown: the
  // table was damaged and none of its indexes could count it.
  std::int64_t lost = 0;
  std::int64_t mended = 0;  // rows kept with a reference changed (see the header comment)
};

struct RecoveryReport {
  std::filesystem::path source;  // the damaged file, unchanged
  std::filesystem::path target;  // the new file
  std::vector<TableRecovery> tables;
  std::int64_t recreated_chats = 0;  // "Recovered chat" rows made for messages whose chat was lost

  const TableRecovery* table(const std::string& name) const;
  // True when nothing was lost (every table read in full; constraints all held).
  bool complete() const;
  // For the user, one line: "Recovered 178 of 180 messages, 60 chats, ...; 2 messages lost."
  std::string summary() const;
};

// Copies what `damaged` still holds into the new file `target` (which must not exist; its folder
// must). Throws Error(InvalidArgument) when target exists, Error(Format) when `damaged` is not an
// InferDesk database or nothing of it can be read (its schema page is ruined), Error(Unsupported)
// for a file of a newer version, Error(Io) when the new file cannot be written (it is removed).
RecoveryReport recover_into(const std::filesystem::path& damaged, const std::filesystem::path& target);

// A name beside `path` that is free: "<stem>.<tag>.db", else "<stem>.<tag>-2.db", -3, ...
std::filesystem::path free_sibling(const std::filesystem::path& path, const std::string& tag);

// Recovers `path` under its own name, for an app that always opens the same file: the readable
// data goes to a new file, the damaged one (with its -wal and -shm, if any) is renamed to
// free_sibling(path, "damaged") and otherwise untouched, then the new file takes `path`'s name.
// The report's source is that renamed original. Errors as recover_into, plus Error(Io) when a
// rename fails (then the original keeps its name).
RecoveryReport recover_in_place(const std::filesystem::path& path);

}  // namespace inferdesk::store
