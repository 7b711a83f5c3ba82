#include "core/store/schema.h"

#include "core/store/store.h"

namespace inferdesk::store::detail {
namespace {

// Version 1: chats as message trees, the model registry, settings and sampling presets.
// (Database::check_tables lists the tables every version must have.)
// Text enums carry CHECK constraints so a bad value can never be written by us.
const char* const kV1 = R"sql(
CREATE TABLE models(
  id INTEGER PRIMARY KEY,
  path TEXT NOT NULL UNIQUE,
  display_name TEXT NOT NULL,
  architecture TEXT NOT NULL DEFAULT '',
  info_json TEXT NOT NULL DEFAULT '{}',
  added_at INTEGER NOT NULL,
  last_loaded_at INTEGER NOT NULL DEFAULT 0);

CREATE TABLE chats(
  id INTEGER PRIMARY KEY,
  title TEXT NOT NULL,
  system_prompt TEXT NOT NULL DEFAULT '',
  sampling_json TEXT NOT NULL DEFAULT '{}',
  model_id INTEGER REFERENCES models(id) ON DELETE SET NULL,
  current_leaf INTEGER REFERENCES messages(id) ON DELETE SET NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL);
CREATE INDEX chats_by_update ON chats(updated_at, id);
CREATE INDEX chats_by_model ON chats(model_id);

CREATE TABLE messages(
  id INTEGER PRIMARY KEY,
  chat_id INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
  parent_id INTEGER REFERENCES messages(id) ON DELETE CASCADE,
  role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
  content TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL CHECK (status IN ('complete', 'streaming', 'stopped', 'error')),
  stats_json TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL);
CREATE INDEX messages_by_parent ON messages(parent_id, created_at, id);
CREATE INDEX messages_by_chat ON messages(chat_id, parent_id);
CREATE INDEX messages_streaming ON messages(status) WHERE status = 'streaming';

CREATE TABLE settings(
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL) WITHOUT ROWID;

CREATE TABLE sampling_presets(
  name TEXT PRIMARY KEY,
  json TEXT NOT NULL,
  updated_at INTEGER NOT NULL) WITHOUT ROWID;
)sql";

// Version 2: the engine comparison dashboard — saved endpoints (their API keys are kept outside
// the database, see core/remote/key_file.h) and benchmark runs with their points and the raw
// per-request records (JSON, so other tools' metric definitions can be computed later).
const char* const kV2 = R"sql(
CREATE TABLE endpoints(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  base_url TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('chat', 'completions')),
  model TEXT NOT NULL DEFAULT '',
  engine TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL);

CREATE TABLE bench_runs(
  id INTEGER PRIMARY KEY,
  label TEXT NOT NULL,
  endpoint_name TEXT NOT NULL,
  base_url TEXT NOT NULL DEFAULT '',
  model TEXT NOT NULL DEFAULT '',
  engine TEXT NOT NULL DEFAULT '',
  engine_version TEXT NOT NULL DEFAULT '',
  engine_flags TEXT NOT NULL DEFAULT '',
  workload_json TEXT NOT NULL DEFAULT '{}',
  machine_json TEXT NOT NULL DEFAULT '{}',
  status TEXT NOT NULL CHECK (status IN ('complete', 'stopped', 'failed')),
  started_at INTEGER NOT NULL,
  finished_at INTEGER NOT NULL);
CREATE INDEX bench_runs_by_start ON bench_runs(started_at, id);

CREATE TABLE bench_points(
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES bench_runs(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  concurrency INTEGER NOT NULL,
  request_rate REAL,
  summary_json TEXT NOT NULL,
  requests_json TEXT NOT NULL DEFAULT '[]',
  UNIQUE(run_id, position));
)sql";

}  // namespace

const char* migration_sql(int version) {
  static_assert(kSchemaVersion == 2, "add the new version's script here");
  switch (version) {
    case 1: return kV1;
    case 2: return kV2;
    default: return nullptr;
  }
}

}  // namespace inferdesk::store::detail
