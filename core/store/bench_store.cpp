// EndpointStore and BenchStore: the engine comparison dashboard's saved endpoints and results.
#include <string>

#include "core/store/statement.h"
#include "core/store/store.h"
#include "core/util/error.h"

namespace inferdesk::store {
namespace {

using detail::Statement;

void check_endpoint(const EndpointRow& row, const char* what) {
  if (row.name.empty()) throw Error(ErrorCode::InvalidArgument, std::string(what) + ": the name is empty");
  if (row.base_url.empty()) throw Error(ErrorCode::InvalidArgument, std::string(what) + ": the URL is empty");
  if (row.kind != "chat" && row.kind != "completions")
    throw Error(ErrorCode::InvalidArgument, std::string(what) + ": kind must be chat or completions");
}

EndpointRow read_endpoint(const Statement& s) {
  return EndpointRow{s.int64(0), s.text(1), s.text(2), s.text(3), s.text(4), s.text(5), s.int64(6)};
}

constexpr const char* kEndpointColumns = "SELECT id, name, base_url, kind, model, engine, created_at FROM endpoints ";

constexpr const char* kRunColumns =
    "SELECT id, label, endpoint_name, base_url, model, engine, engine_version, engine_flags, "
    "workload_json, machine_json, status, started_at, finished_at FROM bench_runs ";

BenchRunRow read_run(const Statement& s) {
  BenchRunRow r;
  r.id = s.int64(0);
  r.label = s.text(1);
  r.endpoint_name = s.text(2);
  r.base_url = s.text(3);
  r.model = s.text(4);
  r.engine = s.text(5);
  r.engine_version = s.text(6);
  r.engine_flags = s.text(7);
  r.workload_json = s.text(8);
  r.machine_json = s.text(9);
  r.status = s.text(10);
  r.started_at = s.int64(11);
  r.finished_at = s.int64(12);
  return r;
}

}  // namespace

std::int64_t EndpointStore::save(const EndpointRow& row) {
  check_endpoint(row, "saving an endpoint");
  Database::Transaction tx(db_, "saving an endpoint");
  Statement s(db_,
              "INSERT INTO endpoints(name, base_url, kind, model, engine, created_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6) "
              "ON CONFLICT(name) DO UPDATE SET base_url = excluded.base_url, kind = excluded.kind, "
              "model = excluded.model, engine = excluded.engine RETURNING id",
              "saving an endpoint");
  s.bind(1, row.name).bind(2, row.base_url).bind(3, row.kind).bind(4, row.model).bind(5, row.engine);
  s.bind(6, db_.now_ms());
  if (!s.step()) throw Error(ErrorCode::Internal, "saving an endpoint: no id returned");
  const std::int64_t id = s.int64(0);
  s.run();
  tx.commit();
  return id;
}

void EndpointStore::update(const EndpointRow& row) {
  check_endpoint(row, "saving an endpoint");
  const int n = detail::write_one(db_, "saving an endpoint",
                                  "UPDATE endpoints SET name = ?2, base_url = ?3, kind = ?4, model = ?5, engine = ?6 "
                                  "WHERE id = ?1",
                                  row.id, row.name, row.base_url, row.kind, row.model, row.engine);
  if (n == 0) throw Error(ErrorCode::InvalidArgument, "saving an endpoint: no endpoint " + std::to_string(row.id));
}

void EndpointStore::remove(std::int64_t id) {
  detail::write_one(db_, "removing an endpoint", "DELETE FROM endpoints WHERE id = ?1", id);
}

std::vector<EndpointRow> EndpointStore::list() const {
  Statement s(db_, (std::string(kEndpointColumns) + "ORDER BY name").c_str(), "reading endpoints");
  std::vector<EndpointRow> out;
  while (s.step()) out.push_back(read_endpoint(s));
  return out;
}

std::optional<EndpointRow> EndpointStore::find(std::string_view name) const {
  Statement s(db_, (std::string(kEndpointColumns) + "WHERE name = ?1").c_str(), "reading an endpoint");
  if (!s.bind(1, name).step()) return std::nullopt;
  return read_endpoint(s);
}

std::int64_t BenchStore::save_run(const BenchRunRow& run) {
  if (run.status != "complete" && run.status != "stopped" && run.status != "failed")
    throw Error(ErrorCode::InvalidArgument, "saving a benchmark run: unknown status '" + run.status + "'");
  Database::Transaction tx(db_, "saving a benchmark run");
  Statement s(db_,
              "INSERT INTO bench_runs(label, endpoint_name, base_url, model, engine, engine_version, engine_flags, "
              "workload_json, machine_json, status, started_at, finished_at) "
              "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
              "saving a benchmark run");
  s.bind(1, run.label).bind(2, run.endpoint_name).bind(3, run.base_url).bind(4, run.model).bind(5, run.engine);
  s.bind(6, run.engine_version).bind(7, run.engine_flags).bind(8, run.workload_json).bind(9, run.machine_json);
  s.bind(10, run.status).bind(11, run.started_at).bind(12, run.finished_at);
  s.run();
  const std::int64_t id = detail::query_int(db_, "SELECT last_insert_rowid()", "saving a benchmark run");
  Statement p(db_,
              "INSERT INTO bench_points(run_id, position, concurrency, request_rate, summary_json, requests_json) "
              "VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
              "saving a benchmark run");
  for (const BenchPointRow& point : run.points) {
    p.bind(1, id).bind(2, static_cast<std::int64_t>(point.position)).bind(3, static_cast<std::int64_t>(point.concurrency));
    p.bind_double(4, point.request_rate).bind(5, point.summary_json).bind(6, point.requests_json);
    p.run();
    p.reset();
  }
  tx.commit();
  return id;
}

BenchRunRow BenchStore::get(std::int64_t run_id) const {
  Statement s(db_, (std::string(kRunColumns) + "WHERE id = ?1").c_str(), "reading a benchmark run");
  if (!s.bind(1, run_id).step())
    throw Error(ErrorCode::NotFound, "reading a benchmark run: no run " + std::to_string(run_id));
  BenchRunRow run = read_run(s);
  Statement p(db_,
              "SELECT id, position, concurrency, request_rate, summary_json, requests_json FROM bench_points "
              "WHERE run_id = ?1 ORDER BY position",
              "reading a benchmark run");
  p.bind(1, run_id);
  while (p.step())
    run.points.push_back(BenchPointRow{p.int64(0), static_cast<int>(p.int64(1)), static_cast<int>(p.int64(2)),
                                       p.optional_double(3), p.text(4), p.text(5)});
  return run;
}

std::vector<BenchRunRow> BenchStore::list() const {
  Statement s(db_, (std::string(kRunColumns) + "ORDER BY started_at DESC, id DESC").c_str(), "reading benchmark runs");
  std::vector<BenchRunRow> out;
  while (s.step()) out.push_back(read_run(s));
  return out;
}

void BenchStore::remove(std::int64_t run_id) {
  detail::write_one(db_, "removing a benchmark run", "DELETE FROM bench_runs WHERE id = ?1", run_id);
}

void BenchStore::rename(std::int64_t run_id, std::string_view label) {
  detail::write_one(db_, "renaming a benchmark run", "UPDATE bench_runs SET label = ?2 WHERE id = ?1", run_id, label);
}

}  // namespace inferdesk::store
