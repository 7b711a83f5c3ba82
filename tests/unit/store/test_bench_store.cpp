// core/store, version 2: saved endpoints and benchmark results — round trips, the upgrade of a
// version-1 file (its chats kept), and files that are damaged or someone else's.
#include <fstream>

#include "core/store/schema.h"
#include "tests/unit/store/store_test_util.h"

namespace inferdesk::store {
namespace {

using testing::error_of;
using testing::query_text;
using testing::raw_sql;
using testing::TempDir;

BenchRunRow sample_run() {
  BenchRunRow run;
  run.label = "vLLM sweep";
  run.endpoint_name = "gpu box";
  run.base_url = "http://10.0.0.2:8000";
  run.model = "llama";
  run.engine = "vLLM";
  run.engine_version = "0.6.3";
  run.engine_flags = "--max-num-seqs 256";
  run.workload_json = R"({"input_len":128,"output_len":128})";
  run.machine_json = R"({"gpu":"none"})";
  run.status = "stopped";
  run.started_at = 1000;
  run.finished_at = 2000;
  run.points.push_back({0, 0, 1, std::nullopt, R"({"completed":4})", R"([{"ttft_s":0.1}])"});
  run.points.push_back({0, 1, 8, 2.5, R"({"completed":8})", "[]"});
  return run;
}

TEST(BenchStore, ARunRoundTripsWithItsPointsInOrder) {
  TempDir dir;
  Database db(dir / "a.db");
  BenchStore runs(db);
  const auto id = runs.save_run(sample_run());
  const BenchRunRow got = runs.get(id);
  EXPECT_EQ(got.label, "vLLM sweep");
  EXPECT_EQ(got.engine_flags, "--max-num-seqs 256");
  EXPECT_EQ(got.workload_json, R"({"input_len":128,"output_len":128})");
  EXPECT_EQ(got.status, "stopped");
  EXPECT_EQ(got.finished_at, 2000);
  ASSERT_EQ(got.points.size(), 2u);
  EXPECT_EQ(got.points[0].concurrency, 1);
  EXPECT_FALSE(got.points[0].request_rate.has_value());
  EXPECT_EQ(got.points[0].requests_json, R"([{"ttft_s":0.1}])");
  EXPECT_EQ(got.points[1].concurrency, 8);
  EXPECT_DOUBLE_EQ(*got.points[1].request_rate, 2.5);
  EXPECT_EQ(runs.list().size(), 1u);
  EXPECT_TRUE(runs.list()[0].points.empty());
  runs.rename(id, "renamed");
  EXPECT_EQ(runs.get(id).label, "renamed");
  runs.remove(id);
  EXPECT_TRUE(runs.list().empty());
  EXPECT_EQ(query_text(db, "SELECT count(*) FROM bench_points"), "0");  // cascaded
  EXPECT_EQ(error_of([&] { runs.get(id); }).code(), ErrorCode::NotFound);
}

TEST(BenchStore, ABadStatusIsRefusedAndNothingIsWritten) {
  TempDir dir;
  Database db(dir / "a.db");
  BenchRunRow run = sample_run();
  run.status = "great";
  EXPECT_EQ(error_of([&] { BenchStore(db).save_run(run); }).code(), ErrorCode::InvalidArgument);
  EXPECT_TRUE(BenchStore(db).list().empty());
}

TEST(EndpointStore, SaveByNameUpdateRemove) {
  TempDir dir;
  Database db(dir / "a.db");
  EndpointStore eps(db);
  const auto id = eps.save({0, "vllm", "http://h:8000", "chat", "", "", 0});
  EXPECT_EQ(eps.save({0, "vllm", "http://h:9000", "completions", "m", "vLLM", 0}), id);  // same name: same row
  auto row = *eps.find("vllm");
  EXPECT_EQ(row.base_url, "http://h:9000");
  EXPECT_EQ(row.kind, "completions");
  EXPECT_EQ(row.engine, "vLLM");
  row.name = "renamed";
  eps.update(row);
  EXPECT_FALSE(eps.find("vllm"));
  EXPECT_EQ(eps.list().size(), 1u);
  EXPECT_EQ(error_of([&] { eps.save({0, "", "http://x", "chat"}); }).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(error_of([&] { eps.save({0, "x", "http://x", "rpc"}); }).code(), ErrorCode::InvalidArgument);
  eps.save({0, "other", "http://o", "chat"});
  row.name = "other";  // taken
  EXPECT_EQ(error_of([&] { eps.update(row); }).code(), ErrorCode::InvalidArgument);
  eps.remove(id);
  EXPECT_EQ(eps.list().size(), 1u);
}

TEST(BenchStore, AVersionOneFileIsUpgradedAndKeepsItsChats) {
  TempDir dir;
  const auto path = dir / "v1.db";
  raw_sql(path, std::string(detail::migration_sql(1)) + "PRAGMA application_id = " + std::to_string(kApplicationId) +
                    "; PRAGMA user_version = 1;"
                    "INSERT INTO chats(id, title, created_at, updated_at) VALUES(7, 'old chat', 1, 1);");
  Database db(path);
  EXPECT_EQ(db.file_version(), 1);
  EXPECT_EQ(db.schema_version(), 2);
  EXPECT_EQ(query_text(db, "PRAGMA user_version"), "2");
  EXPECT_EQ(ChatStore(db).get_chat(7).title, "old chat");
  const auto id = BenchStore(db).save_run(sample_run());
  EXPECT_EQ(BenchStore(db).get(id).points.size(), 2u);
  EndpointStore(db).save({0, "e", "http://e", "chat"});
}

TEST(BenchStore, AFileClaimingVersionTwoWithoutTheTablesIsAFormatError) {
  TempDir dir;
  const auto path = dir / "half.db";
  raw_sql(path, std::string(detail::migration_sql(1)) + "PRAGMA application_id = " + std::to_string(kApplicationId) +
                    "; PRAGMA user_version = 2;");
  const Error e = error_of([&] { Database db(path); });
  EXPECT_EQ(e.code(), ErrorCode::Format);
  EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos);
}

TEST(BenchStore, AForeignOrCorruptFileIsAFormatError) {
  TempDir dir;
  raw_sql(dir / "other.db", "CREATE TABLE bench_runs(x); PRAGMA application_id = 42;");
  EXPECT_EQ(error_of([&] { Database db(dir / "other.db"); }).code(), ErrorCode::Format);
  {
    std::ofstream out(dir / "junk.db", std::ios::binary);
    out << std::string(8192, '\x5a');
  }
  EXPECT_EQ(error_of([&] { Database db(dir / "junk.db"); }).code(), ErrorCode::Format);
}

}  // namespace
}  // namespace inferdesk::store
