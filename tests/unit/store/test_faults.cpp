// core/store: what survives when things go wrong — a process killed mid-stream, a full disk, a
// folder or file the user may not write.
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <map>
#include <string>

#include "tests/unit/store/store_test_util.h"

namespace inferdesk::store {
namespace {

using testing::contains;
using testing::error_of;
using testing::query_text;
using testing::TempDir;

// ---- crash: SIGKILL while a reply streams ----

struct Commit {
  std::int64_t message_id;
  std::int64_t length;  // the message's content length once this commit returned
};

// Chunk i of every streamed reply; a reply's content is always a prefix of chunks 0, 1, 2...
std::string chunk(int i) { return "tok" + std::to_string(i) + " "; }

std::string all_chunks(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += chunk(i);
  return s;
}

constexpr int kChunksPerReply = 40;

// The child: streams replies forever, reporting each commit on `fd` after it returned.
[[noreturn]] void stream_until_killed(const std::filesystem::path& path, int fd) {
  auto report = [fd](std::int64_t id, std::int64_t len) {
    const Commit c{id, len};
    if (write(fd, &c, sizeof c) != static_cast<ssize_t>(sizeof c)) _exit(3);
  };
  try {
    Database db(path);
    ChatStore chats(db);
    const auto chat = chats.create_chat("crash");
    std::int64_t parent = chats.add_message(chat, 0, Role::User, "go");
    report(parent, 2);
    for (;;) {
      const auto reply = chats.add_message(chat, parent, Role::Assistant, "", MessageStatus::Streaming);
      report(reply, 0);
      std::int64_t len = 0;
      for (int i = 0; i < kChunksPerReply; ++i) {
        chats.append_to_message(reply, chunk(i));
        len += static_cast<std::int64_t>(chunk(i).size());
        report(reply, len);
      }
      chats.finish_message(reply, MessageStatus::Complete, R"({"tokens":40})");
      parent = chats.add_message(chat, reply, Role::User, "again");
      report(parent, 5);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child: %s\n", e.what());
    _exit(2);
  }
}

bool read_commit(int fd, Commit& c) {
  auto* p = reinterpret_cast<char*>(&c);
  std::size_t got = 0;
  while (got < sizeof c) {
    const ssize_t n = read(fd, p + got, sizeof c - got);
    if (n <= 0) return false;
    got += static_cast<std::size_t>(n);
  }
  return true;
}

TEST(Crash, EveryCommittedChunkSurvivesSigkillAndTheFileIsIntact) {
  TempDir dir;
  const auto path = dir / "crash.db";
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    stream_until_killed(path, fds[1]);
  }
  close(fds[1]);
  std::map<std::int64_t, std::int64_t> committed;  // message id -> reported length
  Commit c{};
  int count = 0;
  constexpr int kKillAfter = 300;  // commits; several replies, the kill lands mid-stream
  while (count < kKillAfter && read_commit(fds[0], c)) {
    committed[c.message_id] = c.length;
    ++count;
  }
  kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "the child ended by itself (status " << status << ") after " << count << " commits";
  while (read_commit(fds[0], c)) committed[c.message_id] = c.length;  // reported before dying
  close(fds[0]);
  ASSERT_GE(count, kKillAfter);

  Database db(path);
  EXPECT_EQ(query_text(db, "PRAGMA integrity_check"), "ok");
  ChatStore chats(db);
  const std::string full = all_chunks(kChunksPerReply);
  for (const auto& [id, length] : committed) {
    const Message m = chats.get_message(id);
    EXPECT_GE(static_cast<std::int64_t>(m.content.size()), length) << "message " << id;
    if (m.role == Role::Assistant) {
      EXPECT_EQ(m.content, full.substr(0, m.content.size())) << "message " << id;
    }
  }
  // The reply being streamed at the kill is recovered as Stopped; nothing stays Streaming.
  chats.mark_interrupted_streams();
  EXPECT_EQ(query_text(db, "SELECT count(*) FROM messages WHERE status = 'streaming'"), "0");
}

// ---- disk full (simulated by capping the file's page count on this connection) ----

TEST(DiskFull, TheFailingWriteIsAnIoErrorAndEarlierCommitsStay) {
  TempDir dir;
  const auto path = dir / "full.db";
  Database db(path);
  ChatStore chats(db);
  const auto chat = chats.create_chat("c");
  const auto u = chats.add_message(chat, 0, Role::User, "question");
  const auto a = chats.add_message(chat, u, Role::Assistant, "", MessageStatus::Streaming);
  chats.append_to_message(a, "first part");
  db.exec("PRAGMA max_page_count = " + query_text(db, "PRAGMA page_count"));

  const std::string big(1 << 20, 'z');
  const Error e = error_of([&] { chats.append_to_message(a, big); });
  EXPECT_EQ(e.code(), ErrorCode::Io);
  EXPECT_TRUE(contains(e.what(), path.string())) << e.what();
  EXPECT_TRUE(contains(e.what(), "full")) << e.what();
  EXPECT_TRUE(contains(e.what(), "Nothing saved before was lost")) << e.what();
  EXPECT_EQ(error_of([&] { chats.add_message(chat, a, Role::User, big); }).code(), ErrorCode::Io);

  // Everything committed before is readable, and nothing of the failed writes got in.
  EXPECT_EQ(chats.get_message(a).content, "first part");
  EXPECT_TRUE(chats.children(a).empty());
  EXPECT_EQ(chats.get_chat(chat).current_leaf, a);
  // Space comes back: the same connection writes again.
  db.exec("PRAGMA max_page_count = 1073741823");
  chats.append_to_message(a, " and more");
  EXPECT_EQ(chats.get_message(a).content, "first part and more");
  EXPECT_EQ(query_text(db, "PRAGMA integrity_check"), "ok");
}

// ---- folders and files the user may not write ----

// Exit codes of a restricted check.
enum Outcome : int { kIoWithPath = 0, kNoError = 10, kWrongCode = 11, kNoPath = 12, kOther = 13 };
constexpr int kCannotDrop = 77;

// Runs fn, which should throw Error(Io) whose message names `path`.
int expect_io(const std::function<void()>& fn, const std::filesystem::path& path) {
  try {
    fn();
    return kNoError;
  } catch (const Error& e) {
    std::fprintf(stderr, "restricted: %s: %s\n", to_string(e.code()), e.what());
    if (e.code() != ErrorCode::Io) return kWrongCode;
    return contains(e.what(), path.string()) ? kIoWithPath : kNoPath;
  } catch (...) {
    return kOther;
  }
}

// Runs fn as an unprivileged user: in a child that drops to nobody when we are root (root
// ignores permission bits), directly otherwise. Returns fn's result, or kCannotDrop.
int run_unprivileged(const std::function<int()>& fn) {
  if (geteuid() != 0) return fn();
  const pid_t pid = fork();
  if (pid < 0) return kOther;
  if (pid == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(kCannotDrop);
    _exit(fn());
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return kOther;
  return WEXITSTATUS(status);
}

class Permissions : public ::testing::Test {
 protected:
  void SetUp() override {
    // Without root, the checks run in this process: make sure permission bits bind us at all.
    if (geteuid() != 0) {
      const auto probe = dir / "probe";
      std::filesystem::create_directory(probe);
      ::chmod(probe.c_str(), 0555);
      const int fd = ::open((probe / "f").c_str(), O_CREAT | O_WRONLY, 0644);
      if (fd >= 0) {
        ::close(fd);
        GTEST_SKIP() << "permission bits do not stop this user (not root, yet a 0555 folder "
                        "is writable), so a read-only folder cannot be tested here";
      }
    }
  }
  void expect_outcome(int got) {
    if (got == kCannotDrop) GTEST_SKIP() << "running as root but cannot switch to uid 65534";
    EXPECT_EQ(got, kIoWithPath) << "10 = no error, 11 = not Io, 12 = path not named, 13 = other";
  }
  TempDir dir;
};

TEST_F(Permissions, CreatingADatabaseInAReadOnlyFolderIsAnIoError) {
  const auto locked = dir / "locked";
  std::filesystem::create_directory(locked);
  ASSERT_EQ(::chmod(locked.c_str(), 0555), 0);
  const auto path = locked / "new.db";
  expect_outcome(run_unprivileged([&] { return expect_io([&] { Database db(path); }, path); }));
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(Permissions, AWriteProtectedFileOpensReadOnlyAndRefusesWrites) {
  const auto open_dir = dir / "open";
  std::filesystem::create_directory(open_dir);
  ASSERT_EQ(::chmod(open_dir.c_str(), 0777), 0);  // the folder is not the obstacle here
  const auto path = open_dir / "protected.db";
  {
    Database db(path);
    ChatStore(db).create_chat("mine");
  }
  ASSERT_EQ(::chmod(path.c_str(), 0444), 0);
  expect_outcome(run_unprivileged([&] {
    return expect_io(
        [&] {
          Database db(path);
          if (!db.read_only()) return;                         // -> kNoError
          if (ChatStore(db).list_chats().size() != 1) return;  // -> kNoError
          ChatStore(db).create_chat("refused");
        },
        path);
  }));
  Database::Options read_only;
  read_only.read_only = true;
  Database db(path, read_only);
  EXPECT_EQ(ChatStore(db).list_chats().size(), 1u);
}

TEST_F(Permissions, AWritableFileInAReadOnlyFolderIsAnIoErrorNotASilentLoss) {
  // WAL needs its -wal and -shm files beside the database: without them nothing can be saved.
  const auto locked = dir / "locked";
  std::filesystem::create_directory(locked);
  const auto path = locked / "chats.db";
  {
    Database db(path);
    ChatStore(db).create_chat("mine");
  }
  ASSERT_EQ(::chmod(path.c_str(), 0666), 0);
  ASSERT_EQ(::chmod(locked.c_str(), 0555), 0);
  expect_outcome(run_unprivileged([&] {
    return expect_io(
        [&] {
          Database db(path);
          ChatStore(db).create_chat("cannot be saved");
        },
        path);
  }));
}

}  // namespace
}  // namespace inferdesk::store
