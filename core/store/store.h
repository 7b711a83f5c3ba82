// core/store: the desktop app's SQLite storage — chats as message trees, the model registry, app
// settings and sampling presets. SQLite C API only (no Qt), one file per user.
//
// Schema (version kSchemaVersion, kept in PRAGMA user_version; PRAGMA application_id marks the
// file as InferDesk's):
//
//   models(id, path UNIQUE, display_name, architecture, info_json, added_at, last_loaded_at)
//   chats(id, title, system_prompt, sampling_json, model_id -> models ON DELETE SET NULL,
//         current_leaf -> messages ON DELETE SET NULL, created_at, updated_at)
//   messages(id, chat_id -> chats ON DELETE CASCADE, parent_id -> messages ON DELETE CASCADE
//            (NULL = a root of the chat), role, content, status, stats_json, created_at)
//   settings(key PRIMARY KEY, value)
//   sampling_presets(name PRIMARY KEY, json, updated_at)
//   (version 2) endpoints(id, name UNIQUE, base_url, kind chat|completions, model, engine,
//         created_at) — API keys are not here (core/remote/key_file.h)
//   bench_runs(id, label, endpoint_name, base_url, model, engine, engine_version, engine_flags,
//         workload_json, machine_json, status complete|stopped|failed, started_at, finished_at)
//   bench_points(id, run_id -> bench_runs ON DELETE CASCADE, position, concurrency,
//         request_rate (NULL = unlimited), summary_json (vLLM's keys), requests_json (raw records))
//
// A chat is a tree of messages. Editing a user message adds a new user message with the same
// parent (a sibling: a new branch); regenerating a reply adds a new assistant message with the
// same parent (a sibling). chats.current_leaf is the message whose root..leaf path the UI shows;
// switching branch = set_current_leaf(latest_leaf_under(sibling)). Times are unix milliseconds.
// *_json columns are opaque to the store (the GUI's SamplingParams, model facts, generation
// stats); readers must treat them as untrusted text (core/util/json_guard.h).
//
// Durability: the file is in WAL mode with synchronous=FULL, so every committed write has been
// fsynced before the call that made it returns. Every mutating call is its own transaction
// (unless the caller wraps several in a Database::Transaction), so a process crash or power loss
// leaves either all of a call's change or none of it. add_message() returns only after the
// message is durable: the UI shows a message as sent after that. A streamed reply is created with
// add_message(..., Streaming) and grown with append_to_message() per batch of tokens (each batch
// committed), so a crash loses at most the last batch; mark_interrupted_streams() at start-up
// turns replies left Streaming by a crash into Stopped.
//
// Versions: migrations 1..kSchemaVersion run by user_version, each inside one transaction. A file
// whose user_version is newer than this build's is opened read-only (read_only_reason() says why)
// so an older build can show but never damage it; writes then throw Error(Io).
//
// Damage: before anything is written (the switch to WAL, a migration) the file's identity, its
// tables and PRAGMA quick_check are read; a file that fails is refused with nothing written, as
// DamagedDatabase when it is ours (recover.h copies what is readable into a new file).
//
// Errors (inferdesk::Error): Io — the OS or SQLite refused a read/write (disk full, read-only
// folder or file, permissions, locked by another process); the message names the file and
// SQLite's reason and, for writes, says that nothing saved before was lost. Format — the file is
// not a database, is corrupt, or is a database of something else (DamagedDatabase, a subclass:
// ours but damaged). InvalidArgument — an unknown id, a message whose parent is in another chat,
// an empty path or key. OutOfMemory — SQLite ran out of memory. Internal — a bug of ours (an SQL statement SQLite
// rejects).
//
// Threads: a Database and the stores over it are used from one thread at a time. Several
// processes may open the same file (busy_timeout waits for the other's write to finish).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/util/error.h"

struct sqlite3;

namespace inferdesk::store {

// The schema version this build writes and reads.
inline constexpr int kSchemaVersion = 2;
// PRAGMA application_id of InferDesk databases ("IDsk").
inline constexpr std::int32_t kApplicationId = 0x4944736b;

// Error(Format) for an InferDesk database that is damaged: a table is missing or PRAGMA
// quick_check fails. Nothing was written to it; recover_into() (recover.h) can save what is readable.
class DamagedDatabase : public Error {
 public:
  DamagedDatabase(std::filesystem::path path, std::vector<std::string> problems, const std::string& message)
      : Error(ErrorCode::Format, message), path_(std::move(path)), problems_(std::move(problems)) {}
  const std::filesystem::path& path() const { return path_; }
  // What the checks found, one line each (SQLite's quick_check lines, "table 'x' is missing").
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::filesystem::path path_;
  std::vector<std::string> problems_;
};

class Database {
 public:
  struct Options {
    // Open read-only even when the file could be written (never creates or migrates the file).
    bool read_only = false;
    // How long to wait for another connection's write lock before failing with Error(Io).
    int busy_timeout_ms = 5000;
    // Run PRAGMA quick_check at open (reads every page: ~0.4 s for 200 MB in the page cache).
    // Turn off only for a second connection to a file this process has already checked.
    bool check_integrity = true;
    // Unix milliseconds for created_at/updated_at; the system clock when empty (tests inject one).
    std::function<std::int64_t()> clock;
  };

  // Opens (creating when missing; a zero-length file counts as a new database) and migrates the
  // file. The folder must exist. Throws Error(Io / Format / OutOfMemory) as described above.
  explicit Database(const std::filesystem::path& path);
  Database(const std::filesystem::path& path, Options options);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // True when writes are impossible: the file is from a newer version, write-protected, or
  // Options::read_only was set. read_only_reason() is a sentence for the user ("" when writable).
  bool read_only() const { return !read_only_reason_.empty(); }
  const std::string& read_only_reason() const { return read_only_reason_; }
  // The file's user_version as found when opening (before migrations; 0 for a new file).
  int file_version() const { return file_version_; }
  // The schema version in effect now (kSchemaVersion unless read-only with an older/newer file).
  int schema_version() const { return schema_version_; }
  // Current time from Options::clock (or the system clock), unix milliseconds.
  std::int64_t now_ms() const;

  // Groups several store calls into one atomic, durable commit. Nested transactions become
  // savepoints. Destroying an uncommitted Transaction rolls it back (never throws).
  class Transaction {
   public:
    // `what` says what is being saved ("saving a message"); it goes into error messages.
    explicit Transaction(Database& db, std::string_view what = "saving changes");
    ~Transaction();
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void commit();

   private:
    void rollback() noexcept;
    Database& db_;
    std::string what_;
    int depth_ = 0;  // 1 = outermost (BEGIN IMMEDIATE), deeper ones are savepoints
    bool done_ = false;
  };

  // Runs SQL text (several statements allowed), checking the result; for tests and tools.
  void exec(const std::string& sql);
  // The raw connection, for tests and tools (e.g. PRAGMA integrity_check).
  sqlite3* handle() const { return db_; }
  // Throws Error(Io) naming the file and read_only_reason() when read_only(). `what` says what
  // was being saved ("saving a message").
  void require_writable(std::string_view what) const;
  // Throws the Error that an SQLite result code stands for (see the header comment). `what` says
  // what was being done ("saving a message"). Used by the stores.
  [[noreturn]] void fail(int rc, std::string_view what) const;

 private:
  friend class Transaction;
  void open(Options options);
  void configure_writable();
  void check_identity();
  void check_tables(int version);
  void check_integrity();
  void migrate();

  std::filesystem::path path_;
  sqlite3* db_ = nullptr;
  std::function<std::int64_t()> clock_;
  std::string read_only_reason_;
  int file_version_ = 0;
  int schema_version_ = 0;
  int tx_depth_ = 0;
  bool opened_ = false;  // open() finished: later I/O errors happen to a file with saved data
};

enum class Role { System, User, Assistant };
enum class MessageStatus { Complete, Streaming, Stopped, Error };

// "system" / "user" / "assistant"; "complete" / "streaming" / "stopped" / "error".
const char* to_string(Role role);
const char* to_string(MessageStatus status);
// Inverse of to_string; Error(InvalidArgument) for anything else.
Role parse_role(std::string_view text);
MessageStatus parse_message_status(std::string_view text);

struct Chat {
  std::int64_t id = 0;
  std::string title;
  std::string system_prompt;
  std::string sampling_json;  // opaque: the GUI's SamplingParams as JSON ("{}" when unset)
  std::optional<std::int64_t> model_id;
  std::int64_t current_leaf = 0;  // 0 = the chat has no messages shown
  std::int64_t created_at = 0;
  std::int64_t updated_at = 0;       // any change (title, settings, messages)
  std::int64_t last_message_at = 0;  // the newest message's created_at; 0 = no messages (read only)
};

struct Message {
  std::int64_t id = 0;
  std::int64_t chat_id = 0;
  std::int64_t parent_id = 0;  // 0 = a root message of the chat
  Role role = Role::User;
  std::string content;
  MessageStatus status = MessageStatus::Complete;
  std::string stats_json;  // opaque: tokens, tok/s, ttft, finish reason ("{}" when unset)
  std::int64_t created_at = 0;
};

// The messages sharing a parent (roots share the chat), in created order, and where one is.
struct Siblings {
  std::vector<std::int64_t> ids;
  std::size_t index = 0;  // position of the asked-for message in ids
};

class ChatStore {
 public:
  explicit ChatStore(Database& db) : db_(db) {}

  std::int64_t create_chat(std::string_view title, std::string_view system_prompt = {},
                           std::string_view sampling_json = "{}", std::optional<std::int64_t> model_id = std::nullopt);
  void rename_chat(std::int64_t chat_id, std::string_view title);
  void delete_chat(std::int64_t chat_id);  // its messages go with it
  Chat get_chat(std::int64_t chat_id) const;
  std::vector<Chat> list_chats() const;  // most recently updated first
  // Chats whose title or any message contains `text` (ASCII case-insensitive; % and _ are
  // literal), most recently updated first. Empty text lists every chat; text over 10000 bytes
  // is Error(InvalidArgument).
  std::vector<Chat> search_chats(std::string_view text) const;
  void set_system_prompt(std::int64_t chat_id, std::string_view system_prompt);
  void set_sampling_json(std::int64_t chat_id, std::string_view sampling_json);
  void set_chat_model(std::int64_t chat_id, std::optional<std::int64_t> model_id);

  // Adds a message under `parent_id` (0 = a new root) and makes it the chat's current leaf;
  // durable before it returns. The parent must belong to the same chat.
  std::int64_t add_message(std::int64_t chat_id, std::int64_t parent_id, Role role, std::string_view content,
                           MessageStatus status = MessageStatus::Complete);
  // Appends a streamed chunk (committed before returning). Only for Streaming messages.
  void append_to_message(std::int64_t message_id, std::string_view text);
  // Ends a stream (or changes any message's status) and stores its stats.
  void finish_message(std::int64_t message_id, MessageStatus status, std::string_view stats_json = "{}");
  // Replaces a message's content (e.g. fixing up a reply); prefer add_message for user edits.
  void set_message_content(std::int64_t message_id, std::string_view content);
  // Start-up recovery: every Streaming message becomes Stopped. Returns how many changed (0, and
  // nothing done, on a read-only database).
  int mark_interrupted_streams();

  // Chooses the branch the chat shows (leaf_id 0 = none). Does not change updated_at.
  void set_current_leaf(std::int64_t chat_id, std::int64_t leaf_id);
  Message get_message(std::int64_t message_id) const;
  // root .. leaf, inclusive. Error(Format) when the file's parent links form a cycle.
  std::vector<Message> path_to(std::int64_t leaf_id) const;
  // Children of a message, oldest first (created_at, then id).
  std::vector<Message> children(std::int64_t parent_id) const;
  // The chat's root messages, oldest first.
  std::vector<Message> roots(std::int64_t chat_id) const;
  Siblings siblings(std::int64_t message_id) const;
  // Follows the most recent child from `message_id` down to a leaf (itself when childless).
  std::int64_t latest_leaf_under(std::int64_t message_id) const;
  // Every message of the chat, by id (export).
  std::vector<Message> all_messages(std::int64_t chat_id) const;
  // Writes a whole chat in one transaction (import): chat's title, system_prompt, sampling_json,
  // created_at and updated_at (its id, model_id and last_message_at are ignored), and `messages`
  // with their role, content, status, stats_json and created_at. Message ids and parent_ids are
  // the caller's own numbering: each parent_id is 0 or the id of an earlier entry, ids are
  // unique, and chat.current_leaf is 0 or one of them. Returns the new chat's id;
  // Error(InvalidArgument), with nothing written, when the list breaks these rules.
  std::int64_t insert_chat(const Chat& chat, const std::vector<Message>& messages);

 private:
  void touch_chat(std::int64_t chat_id);
  void require_chat(std::int64_t chat_id) const;
  Database& db_;
};

struct ModelEntry {
  std::int64_t id = 0;
  std::string path;  // the model folder
  std::string display_name;
  std::string architecture;  // model_type, e.g. "qwen3"
  std::string info_json;     // opaque: facts from inspect_model_folder ("{}" when unset)
  std::int64_t added_at = 0;
  std::int64_t last_loaded_at = 0;  // 0 = never loaded
};

class ModelRegistry {
 public:
  explicit ModelRegistry(Database& db) : db_(db) {}

  // Adds a folder; adding a path already registered updates its name, architecture and info
  // and keeps its id and added_at. Returns the id.
  std::int64_t add(std::string_view path, std::string_view display_name, std::string_view architecture = {},
                   std::string_view info_json = "{}");
  void remove(std::int64_t model_id);  // chats using it keep their messages, model_id unset
  ModelEntry get(std::int64_t model_id) const;
  std::optional<ModelEntry> find_by_path(std::string_view path) const;
  std::vector<ModelEntry> list() const;      // most recently loaded first, then most recently added
  void touch_loaded(std::int64_t model_id);  // last_loaded_at = now

 private:
  Database& db_;
};

struct SamplingPreset {
  std::string name;
  std::string json;  // opaque: SamplingParams as JSON
  std::int64_t updated_at = 0;
};

class Settings {
 public:
  explicit Settings(Database& db) : db_(db) {}

  std::optional<std::string> get(std::string_view key) const;
  std::string get_or(std::string_view key, std::string_view fallback) const;
  void set(std::string_view key, std::string_view value);
  void remove(std::string_view key);

  std::vector<SamplingPreset> list_presets() const;  // by name
  std::optional<SamplingPreset> get_preset(std::string_view name) const;
  void save_preset(std::string_view name, std::string_view json);  // creates or replaces
  void delete_preset(std::string_view name);

 private:
  Database& db_;
};

struct EndpointRow {
  std::int64_t id = 0;
  std::string name;  // unique
  std::string base_url;
  std::string kind = "chat";  // "chat" / "completions"
  std::string model;
  std::string engine;  // as last detected ("" = never probed)
  std::int64_t created_at = 0;
};

// Saved OpenAI-compatible endpoints (the dashboard's and the chat page's remote providers).
class EndpointStore {
 public:
  explicit EndpointStore(Database& db) : db_(db) {}
  // Adds, or updates the row of that name (keeping its id). Returns the id. An empty name or
  // URL, or a kind other than chat/completions, is Error(InvalidArgument).
  std::int64_t save(const EndpointRow& row);
  // Renames too: the row with row.id gets all of row's fields. Error(InvalidArgument) for an
  // unknown id or a name another row has.
  void update(const EndpointRow& row);
  void remove(std::int64_t id);
  std::vector<EndpointRow> list() const;  // by name
  std::optional<EndpointRow> find(std::string_view name) const;

 private:
  Database& db_;
};

struct BenchPointRow {
  std::int64_t id = 0;
  int position = 0;  // order within the run (a sweep's points)
  int concurrency = 0;
  std::optional<double> request_rate;  // nullopt: as fast as allowed
  std::string summary_json;            // bench::to_json(summary): vLLM's --save-result keys
  std::string requests_json = "[]";    // raw per-request records
};

struct BenchRunRow {
  std::int64_t id = 0;
  std::string label;
  std::string endpoint_name, base_url, model;
  std::string engine, engine_version, engine_flags;  // flags: free text the user typed
  std::string workload_json = "{}";
  std::string machine_json = "{}";
  std::string status = "complete";  // "complete" / "stopped" / "failed"
  std::int64_t started_at = 0, finished_at = 0;
  std::vector<BenchPointRow> points;  // filled by get(); list() leaves it empty
};

// Benchmark results of the dashboard. Every *_json column is untrusted text to its readers.
class BenchStore {
 public:
  explicit BenchStore(Database& db) : db_(db) {}
  // Saves a run with its points in one transaction; returns the run's id (points get theirs).
  std::int64_t save_run(const BenchRunRow& run);
  BenchRunRow get(std::int64_t run_id) const;  // Error(NotFound) for an unknown id
  std::vector<BenchRunRow> list() const;       // newest first, without points
  void remove(std::int64_t run_id);
  void rename(std::int64_t run_id, std::string_view label);

 private:
  Database& db_;
};

}  // namespace inferdesk::store
