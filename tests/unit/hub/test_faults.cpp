// Every fault the local Hub injects ends in a verified file or a clear failure with nothing under
// the final name.
#include <chrono>

#include "tests/unit/hub/hub_fixture.h"

namespace inferdesk::test {
namespace {

using hub::FileState;
using hub::HubErrorKind;

constexpr const char* kBlob = "extra/blob.safetensors";  // 4 MiB random, LFS
constexpr const char* kModel = "model.safetensors";      // tiny-chat's weights, LFS

class FaultTest : public HubTest {
 protected:
  std::string sha(const std::string& path) { return hub_.tree(kTinyRepo).at(path)["lfs"]["oid"]; }
  std::vector<nlohmann::json> cdn_gets(const std::string& path) { return hub_.requests_for("/_cdn/" + sha(path)); }
  void expect_verified(const hub::DownloadResult& r, const std::string& path) {
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(sha256sum(r.snapshot_dir / path), sha(path));
    EXPECT_FALSE(fs::exists(incomplete(path)));
  }
};

TEST_F(FaultTest, DroppedConnectionResumesWithARangeFromTheBytesOnDisk) {
  hub_.fault({{"path", kBlob}, {"kind", "drop"}, {"at", 1000000}});
  const auto r = download(kTinyRepo, {kBlob});
  expect_verified(r, kBlob);
  const auto gets = cdn_gets(kBlob);
  ASSERT_EQ(gets.size(), 2u);
  EXPECT_TRUE(gets[0]["range"].is_null());
  EXPECT_EQ(gets[1]["range"], "bytes=1000000-");
  EXPECT_EQ(file(r, kBlob).attempt, 2);
}

TEST_F(FaultTest, RepeatedDropsAtTheSameByteGiveUpWithTheReason) {
  hub_.fault({{"path", kModel}, {"kind", "drop"}, {"at", 5000}, {"count", -1}});
  auto o = fast_options();
  o.retry.max_attempts = 3;
  const auto r = download(kTinyRepo, {kModel}, o);
  ASSERT_FALSE(r.ok);
  const auto& f = file(r, kModel);
  EXPECT_EQ(f.state, FileState::Failed);
  EXPECT_EQ(f.error, HubErrorKind::ConnectionDropped);
  EXPECT_NE(f.message.find("gave up after 3 attempts"), std::string::npos) << f.message;
  expect_nothing_final(kModel, r.commit);
  EXPECT_EQ(fs::file_size(incomplete(kModel)), 5000u);  // a later run resumes from here
}

TEST_F(FaultTest, CorruptByteIsCaughtAndTheFileDownloadedAgain) {
  hub_.fault({{"path", kModel}, {"kind", "corrupt"}, {"at", 12345}});
  const auto r = download(kTinyRepo, {kModel});
  expect_verified(r, kModel);
  EXPECT_EQ(read_file(r.snapshot_dir / kModel), source(kModel));
  const auto gets = cdn_gets(kModel);
  ASSERT_EQ(gets.size(), 2u);
  EXPECT_TRUE(gets[1]["range"].is_null());  // the proved-wrong bytes were not resumed from
}

TEST_F(FaultTest, CorruptEveryTimeFailsWithNothingHalfWritten) {
  hub_.fault({{"path", kModel}, {"kind", "corrupt"}, {"at", 100}, {"count", -1}});
  const auto r = download(kTinyRepo, {kModel});
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(file(r, kModel).error, HubErrorKind::Integrity);
  EXPECT_NE(file(r, kModel).message.find("hash"), std::string::npos);
  expect_nothing_final(kModel, r.commit);
  EXPECT_FALSE(fs::exists(incomplete(kModel)));
  const auto done = seen(kModel);
  EXPECT_TRUE(std::none_of(done.begin(), done.end(), [](const auto& p) { return p.state == FileState::Done; }));
}

TEST_F(FaultTest, ServerErrorsAreRetried) {
  hub_.fault({{"path", kModel}, {"kind", "status"}, {"status", 500}, {"count", 2}});
  hub_.fault({{"path", "config.json"}, {"kind", "status"}, {"status", 503}, {"on", "resolve"}});
  const auto r = download(kTinyRepo, {kModel, "config.json"});
  expect_verified(r, kModel);
  EXPECT_EQ(cdn_gets(kModel).size(), 3u);
  EXPECT_EQ(file(r, kModel).attempt, 3);
  EXPECT_EQ(read_file(r.snapshot_dir / "config.json"), source("config.json"));
}

TEST_F(FaultTest, RateLimitWaitsAsLongAsRetryAfterSays) {
  hub_.fault({{"path", "config.json"}, {"kind", "ratelimit"}, {"retry_after", 1}, {"on", "resolve"}});
  const auto start = std::chrono::steady_clock::now();
  const auto r = download(kTinyRepo, {"config.json"});  // backoff alone would wait 20 ms
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_GE(s, 0.95);
  int limited = 0;
  for (const auto& q : hub_.requests_for("/config.json", "")) limited += q["status"] == 429 ? 1 : 0;
  EXPECT_EQ(limited, 1);
  const auto states = seen("config.json");
  EXPECT_TRUE(std::any_of(states.begin(), states.end(),
                          [](const auto& p) { return p.message.find("rate-limiting") != std::string::npos; }));
}

TEST_F(FaultTest, SlowTrickleShowsSpeedAndEta) {
  hub_.fault({{"path", kModel}, {"kind", "trickle"}, {"rate", 400000}});
  const auto r = download(kTinyRepo, {kModel});
  expect_verified(r, kModel);
  const auto states = seen(kModel);
  const auto with_speed = std::find_if(states.begin(), states.end(), [](const auto& p) {
    return p.state == FileState::Downloading && p.speed_bytes_per_s > 0 && p.eta_s > 0;
  });
  ASSERT_NE(with_speed, states.end());
  EXPECT_GT(with_speed->speed_bytes_per_s, 50e3);  // loose: a busy 2-core CI machine slows the server
  EXPECT_LT(with_speed->speed_bytes_per_s, 2e6);  // the trickle's 400 kB/s, give or take
}

TEST_F(FaultTest, SizeChangeBetweenListingAndDownloadFailsClearly) {
  hub_.fault({{"path", kModel}, {"kind", "grow"}, {"extra", 10}, {"count", -1}});
  const auto r = download(kTinyRepo, {kModel});
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(file(r, kModel).error, HubErrorKind::SizeChanged);
  EXPECT_NE(file(r, kModel).message.find("changed size"), std::string::npos);
  expect_nothing_final(kModel, r.commit);
  EXPECT_TRUE(cdn_gets(kModel).empty());  // caught at the HEAD, before any byte
}

TEST_F(FaultTest, BodyLongerThanTheHeadersSaidFailsClearly) {
  hub_.fault({{"path", kModel}, {"kind", "grow"}, {"extra", 10}, {"count", -1}, {"head", false}});
  const auto r = download(kTinyRepo, {kModel});
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(file(r, kModel).error, HubErrorKind::SizeChanged);
  expect_nothing_final(kModel, r.commit);
}

TEST_F(FaultTest, ResumesAnIncompleteFileLeftByAnEarlierRun) {
  const std::string bytes = source(kModel);
  fs::create_directories(repo_dir() / "blobs");
  {
    std::ofstream out(incomplete(kModel), std::ios::binary);
    out.write(bytes.data(), 300000);
  }
  const auto r = download(kTinyRepo, {kModel});
  expect_verified(r, kModel);
  const auto gets = cdn_gets(kModel);
  ASSERT_EQ(gets.size(), 1u);
  EXPECT_EQ(gets[0]["range"], "bytes=300000-");
}

TEST_F(FaultTest, GarbageIncompleteFileIsProvedWrongAndReplaced) {
  fs::create_directories(repo_dir() / "blobs");
  std::ofstream(incomplete(kModel), std::ios::binary) << std::string(300000, 'x');
  const auto r = download(kTinyRepo, {kModel});
  expect_verified(r, kModel);
  EXPECT_EQ(read_file(r.snapshot_dir / kModel), source(kModel));
}

TEST_F(FaultTest, ServerIgnoringRangeStartsTheFileOver) {
  const std::string bytes = source(kModel);
  fs::create_directories(repo_dir() / "blobs");
  {
    std::ofstream out(incomplete(kModel), std::ios::binary);
    out.write(bytes.data(), 100000);
  }
  hub_.fault({{"path", kModel}, {"kind", "ignore_range"}});
  const auto r = download(kTinyRepo, {kModel});
  expect_verified(r, kModel);
  EXPECT_EQ(read_file(r.snapshot_dir / kModel), bytes);
}

TEST_F(FaultTest, OneFailedFileDoesNotStopTheOthers) {
  hub_.fault({{"path", kModel}, {"kind", "corrupt"}, {"at", 1}, {"count", -1}});
  const auto r = download(kTinyRepo);
  ASSERT_FALSE(r.ok);
  for (const auto& f : r.files) EXPECT_EQ(f.state, f.path == kModel ? FileState::Failed : FileState::Done) << f.path;
  EXPECT_NE(r.error.find(kModel), std::string::npos);
  EXPECT_FALSE(fs::exists(repo_dir() / "refs" / "main"));  // an incomplete snapshot gets no ref
}

}  // namespace
}  // namespace inferdesk::test
