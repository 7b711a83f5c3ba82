// Helpers of the core/store damage tests: a populated database made by our store, the pages of
// one of its b-trees (from sqlite_schema's rootpage and the interior page's cell pointers), and
// garbage written over one page.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "core/store/store.h"

namespace inferdesk::store::testing {

inline std::string file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline bool has_wal_or_shm(const std::filesystem::path& path) {
  return std::filesystem::exists(path.string() + "-wal") || std::filesystem::exists(path.string() + "-shm");
}

// `chats` chats with long titles (the chats table spans several pages), each with a chain
// user -> assistant -> user of 300..420-byte messages (the messages table spans many pages).
inline void make_populated(const std::filesystem::path& path, int chats = 60) {
  Database db(path);
  ChatStore store(db);
  Database::Transaction tx(db, "filling a test database");  // one commit: fast
  Settings(db).set("theme", "dark");
  Settings(db).save_preset("precise", R"({"temperature":0.1})");
  ModelRegistry(db).add("/models/a", "A", "qwen3");
  for (int i = 0; i < chats; ++i) {
    const auto c = store.create_chat("chat " + std::to_string(i) + " " + std::string(200, 't'));
    // Uneven sizes, so that a page's rows do not line up with whole chats.
    auto m = store.add_message(c, 0, Role::User, std::string(300 + i % 7 * 20, 'u'));
    m = store.add_message(c, m, Role::Assistant, std::string(300, 'a'));
    store.add_message(c, m, Role::User, std::string(300, 'v'));
  }
  tx.commit();
}  // the last close checkpoints the log into the file

struct BTree {
  std::uint32_t page_size = 0;
  std::uint32_t root = 0;
  std::vector<std::uint32_t> children;  // the root's child pages; empty when the root is a leaf
};

// The root page of table or index `name` and, when the root is interior, its children.
inline BTree btree_of(const std::filesystem::path& path, const std::string& name) {
  BTree t;
  sqlite3* db = nullptr;
  // immutable: a plain read-only connection would leave -wal and -shm beside the file.
  const std::string uri = "file:" + path.string() + "?immutable=1";
  EXPECT_EQ(sqlite3_open_v2(uri.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  const std::string sql =
      "SELECT rootpage, (SELECT page_size FROM pragma_page_size) FROM sqlite_schema WHERE name = '" + name + "'";
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK);
  if (sqlite3_step(st) == SQLITE_ROW) {
    t.root = static_cast<std::uint32_t>(sqlite3_column_int64(st, 0));
    t.page_size = static_cast<std::uint32_t>(sqlite3_column_int64(st, 1));
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  EXPECT_GT(t.root, 1u) << name;
  const std::string bytes = file_bytes(path);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data()) + std::size_t(t.root - 1) * t.page_size;
  auto be32 = [](const unsigned char* q) { return std::uint32_t(q[0]) << 24 | q[1] << 16 | q[2] << 8 | q[3]; };
  if (p[0] != 0x05 && p[0] != 0x02) return t;  // a leaf (0x0d table, 0x0a index)
  const int cells = p[3] << 8 | p[4];
  for (int i = 0; i < cells; ++i) {
    const int offset = p[12 + 2 * i] << 8 | p[13 + 2 * i];
    t.children.push_back(be32(p + offset));
  }
  t.children.push_back(be32(p + 8));  // the right-most child
  return t;
}

// Writes random bytes over page `page` (1-based) of the file.
inline void ruin_page(const std::filesystem::path& path, std::uint32_t page, std::uint32_t page_size) {
  std::mt19937 rng(page);
  std::string junk(page_size, '\0');
  for (auto& c : junk) c = static_cast<char>(rng() & 0xff);
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  f.seekp(std::streamoff(page - 1) * page_size);
  f.write(junk.data(), std::streamsize(junk.size()));
}

// Writes garbage over child `child` of b-tree `name`'s root (the root itself when it is a leaf and
// child is 0); fails the test when the tree has too few pages.
inline void ruin_child(const std::filesystem::path& path, const std::string& name, std::size_t child) {
  const BTree t = btree_of(path, name);
  if (t.children.empty() && child == 0) return ruin_page(path, t.root, t.page_size);
  ASSERT_GT(t.children.size(), child + 1) << name << " should span more pages";
  ruin_page(path, t.children[child], t.page_size);
}

}  // namespace inferdesk::store::testing
