// The downloader against the local Hub without faults: the cache layout huggingface_hub writes,
// reuse, offline mode, gated repositories, the API calls, the filters and the controls.
#include <thread>

#include "tests/unit/hub/hub_fixture.h"

namespace inferdesk::test {
namespace {

using hub::FileState;
using hub::HubError;
using hub::HubErrorKind;

TEST_F(HubTest, SnapshotMatchesTheHubAndHuggingfaceHubsLayout) {
  const auto r = download(kTinyRepo, {}, fast_options(), "main", "hf_some_token");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.files.size(), 9u);
  const auto tree = hub_.tree(kTinyRepo);
  for (const char* name : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"})
    EXPECT_EQ(read_file(r.snapshot_dir / name), source(name)) << name;
  EXPECT_EQ(sha256sum(r.snapshot_dir / "extra/blob.safetensors"), tree.at("extra/blob.safetensors")["lfs"]["oid"]);
  EXPECT_EQ(r.snapshot_dir, repo_dir() / "snapshots" / r.commit);
  EXPECT_EQ(read_file(repo_dir() / "refs" / "main"), r.commit);
  // Relative links into blobs/, one ../ more per folder level, named by LFS sha256 or git oid.
  EXPECT_EQ(fs::read_symlink(r.snapshot_dir / "model.safetensors").string(),
            "../../blobs/" + tree.at("model.safetensors")["lfs"]["oid"].get<std::string>());
  EXPECT_EQ(fs::read_symlink(r.snapshot_dir / "extra/blob.safetensors").string(),
            "../../../blobs/" + tree.at("extra/blob.safetensors")["lfs"]["oid"].get<std::string>());
  EXPECT_EQ(fs::read_symlink(r.snapshot_dir / "config.json").string(),
            "../../blobs/" + tree.at("config.json")["oid"].get<std::string>());
  // Never pickle, never a leftover .incomplete.
  EXPECT_FALSE(fs::exists(fs::symlink_status(r.snapshot_dir / "pytorch_model.bin")));
  EXPECT_FALSE(fs::exists(blob("pytorch_model.bin")));
  for (const auto& e : fs::directory_iterator(repo_dir() / "blobs")) EXPECT_NE(e.path().extension(), ".incomplete");
  EXPECT_TRUE(hub_.requests_for("/pytorch_model.bin", "").empty());
  // The token goes to the Hub's host only, never to the CDN the LFS files redirect to.
  const auto cdn = hub_.requests_for("", "GET");
  int cdn_gets = 0;
  for (const auto& q : cdn) {
    const std::string path = q["path"];
    if (path.rfind("/_cdn/", 0) != 0) continue;
    ++cdn_gets;
    EXPECT_FALSE(q["auth"].get<bool>()) << path;
    EXPECT_EQ(q["host"].get<std::string>().rfind("localhost:", 0), 0u);
  }
  EXPECT_EQ(cdn_gets, 2);  // model.safetensors and extra/blob.safetensors
  EXPECT_TRUE(hub_.requests_for("/revision/main")[0]["auth"].get<bool>());
}

TEST_F(HubTest, EveryFileIsReportedDoneOnlyAfterVerifying) {
  ASSERT_TRUE(download(kTinyRepo).ok);
  for (const char* path : {"model.safetensors", "config.json"}) {
    const auto states = seen(path);
    ASSERT_FALSE(states.empty()) << path;
    EXPECT_EQ(states.back().state, FileState::Done);
    const auto verifying = std::find_if(states.begin(), states.end(),
                                        [](const hub::FileProgress& p) { return p.state == FileState::Verifying; });
    const auto done = std::find_if(states.begin(), states.end(),
                                   [](const hub::FileProgress& p) { return p.state == FileState::Done; });
    EXPECT_LT(verifying - states.begin(), done - states.begin()) << path;
    EXPECT_EQ(std::count_if(states.begin(), states.end(), [](const auto& p) { return p.state == FileState::Done; }), 1);
  }
}

TEST_F(HubTest, SecondDownloadReusesEveryBlob) {
  ASSERT_TRUE(download(kTinyRepo).ok);
  hub_.reset();
  const auto again = download(kTinyRepo);
  ASSERT_TRUE(again.ok);
  for (const auto& f : again.files) EXPECT_TRUE(f.from_cache) << f.path;
  for (const auto& q : hub_.requests()) {
    const std::string path = q["path"];
    EXPECT_EQ(path.find("/resolve/"), std::string::npos) << path;
    EXPECT_NE(path.rfind("/_cdn/", 0), 0u) << path;
  }
}

TEST_F(HubTest, AnotherRevisionDownloadsOnlyWhatDiffers) {
  ASSERT_TRUE(download(kTinyRepo).ok);
  hub_.reset();
  const auto v1 = download(kTinyRepo, {}, fast_options(), "v1");
  ASSERT_TRUE(v1.ok) << v1.error;
  EXPECT_TRUE(file(v1, "model.safetensors").from_cache);  // same bytes, same blob
  EXPECT_FALSE(file(v1, "README.md").from_cache);         // v1's own README
  EXPECT_TRUE(hub_.requests_for("/_cdn/", "GET").empty());
  EXPECT_EQ(hub_.requests_for("/README.md", "GET").size(), 1u);
  EXPECT_EQ(read_file(repo_dir() / "refs" / "v1"), v1.commit);
  EXPECT_EQ(read_file(v1.snapshot_dir / "README.md"), "# tiny-chat v1\n");
}

TEST_F(HubTest, OfflineModeAnswersFromTheCacheOnly) {
  auto offline = fast_options();
  offline.offline = true;
  const hub::HfCache cache(cache_dir());
  try {
    hub::plan_download(client(), cache, {kTinyRepo, "main", {}}, offline);
    FAIL() << "offline without a cache succeeded";
  } catch (const HubError& e) {
    EXPECT_EQ(e.kind(), HubErrorKind::Offline);
    EXPECT_NE(std::string(e.what()).find("HF_HUB_OFFLINE"), std::string::npos);
  }
  const auto online = download(kTinyRepo);
  ASSERT_TRUE(online.ok);
  hub_.reset();
  const auto r = download(kTinyRepo, {"*.json"}, offline);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.snapshot_dir, online.snapshot_dir);
  EXPECT_EQ(r.files.size(), 4u);
  EXPECT_TRUE(hub_.requests().empty());  // not one request
}

TEST_F(HubTest, GatedRepoNeedsAccessAndSaysWhereToAskForIt) {
  const hub::HfCache cache(cache_dir());
  for (const std::string token : {"", "hf_without_access"}) {
    try {
      hub::plan_download(client(token), cache, {kGatedRepo, "main", {}}, fast_options());
      FAIL() << "gated repo downloaded with token '" << token << "'";
    } catch (const HubError& e) {
      EXPECT_EQ(e.kind(), HubErrorKind::Gated);
      EXPECT_EQ(e.http_status(), token.empty() ? 401 : 403);
      const std::string expected = "this model is gated: request access at " + hub_.url() + "/" + kGatedRepo;
      EXPECT_EQ(std::string(e.what()).rfind(expected, 0), 0u) << e.what();
      if (token.empty()) {
        EXPECT_NE(std::string(e.what()).find(", then add a token"), std::string::npos);
      }
    }
  }
  EXPECT_FALSE(fs::exists(repo_dir(kGatedRepo) / "blobs"));
  const auto r = download(kGatedRepo, {}, fast_options(), "main", kGrantedToken);
  EXPECT_TRUE(r.ok) << r.error;
}

TEST_F(HubTest, NotFoundErrorsAreDistinguished) {
  const auto c = client();
  auto kind_of = [](auto&& f) {
    try {
      f();
    } catch (const HubError& e) {
      return e.kind();
    }
    return HubErrorKind::Cancelled;  // nothing thrown
  };
  EXPECT_EQ(kind_of([&] { c.model_info(kTinyRepo, "no-such-branch"); }), HubErrorKind::RevisionNotFound);
  EXPECT_EQ(kind_of([&] { c.model_info("inferdesk-test/missing"); }), HubErrorKind::RepoNotFound);
  EXPECT_EQ(kind_of([&] { c.file_metadata(kTinyRepo, "main", "missing.json"); }), HubErrorKind::EntryNotFound);
  EXPECT_EQ(kind_of([&] { c.model_info("not a repo"); }), HubErrorKind::RepoNotFound);
  hub::HubClientOptions o;
  o.endpoint = "http://127.0.0.1:1";  // nothing listens on port 1
  EXPECT_EQ(kind_of([&] { hub::HubClient(o).model_info(kTinyRepo); }), HubErrorKind::Network);
}

TEST_F(HubTest, ModelInfoSearchAndReadme) {
  const auto c = client();
  const auto info = c.model_info(kTinyRepo);
  EXPECT_TRUE(hub::is_commit_hash(info.sha));
  EXPECT_EQ(info.license, "apache-2.0");
  EXPECT_EQ(info.model_type, "qwen2");
  EXPECT_EQ(info.architectures, std::vector<std::string>{"Qwen2ForCausalLM"});
  EXPECT_GT(info.safetensors_total, 0);
  EXPECT_EQ(info.siblings.size(), 11u);
  EXPECT_EQ(c.model_info(kGatedRepo).gated, hub::Gated::Manual);
  const auto found = c.search({"inferdesk", 2});
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].id, kTinyRepo);  // most downloaded first
  EXPECT_EQ(found[0].downloads, 1234);
  EXPECT_EQ(found[0].likes, 56);
  EXPECT_EQ(found[1].gated, hub::Gated::Manual);
  const auto q = hub_.requests_for("/api/models")[0]["query"].get<std::string>();
  EXPECT_NE(q.find("search=inferdesk"), std::string::npos);
  EXPECT_NE(q.find("filter=text-generation"), std::string::npos);
  EXPECT_NE(q.find("sort=downloads"), std::string::npos);
  EXPECT_NE(q.find("limit=2"), std::string::npos);
  EXPECT_NE(c.readme(kTinyRepo).find("# tiny-chat"), std::string::npos);
}

TEST_F(HubTest, FileListFollowsPages) {
  hub_.tree_page_size(3);
  const auto files = client().list_files(kTinyRepo, "main");
  EXPECT_EQ(files.size(), 11u);
  EXPECT_GE(hub_.requests_for("/tree/main").size(), 4u);
}

TEST_F(HubTest, IncludeGlobsNarrowTheAllowList) {
  const auto r = download(kTinyRepo, {"*.json"});
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.files.size(), 4u);
  EXPECT_FALSE(fs::exists(r.snapshot_dir / "model.safetensors"));
  try {
    download(kTinyRepo, {"*.bin"});
    FAIL() << "pickle downloaded through --include";
  } catch (const HubError& e) {
    EXPECT_EQ(e.kind(), HubErrorKind::NotAllowed);
  }
  EXPECT_THROW(download(kPickleRepo), HubError);
}

TEST_F(HubTest, DiskSpaceIsCheckedBeforeAnyByteMoves) {
  auto o = fast_options();
  o.reserve_free_bytes = int64_t{1} << 60;
  try {
    download(kTinyRepo, {}, o);
    FAIL() << "no disk-space refusal";
  } catch (const HubError& e) {
    EXPECT_EQ(e.kind(), HubErrorKind::DiskSpace);
    EXPECT_NE(std::string(e.what()).find("free"), std::string::npos);
  }
  EXPECT_TRUE(hub_.requests_for("/resolve/", "").empty());
  EXPECT_TRUE(hub_.requests_for("/_cdn/", "").empty());
}

// Waits until `pred` holds (checked every 10 ms) or 20 s pass.
template <class Pred>
bool eventually(Pred pred) {
  for (int i = 0; i < 2000; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// A download of extra/blob.safetensors (4 MiB) trickled at `rate` bytes/s, running until `bytes` of
// it are on disk.
class ControlTest : public HubTest {
 protected:
  void start(int rate, int64_t bytes) {
    hub_.fault({{"path", kBlob}, {"kind", "trickle"}, {"rate", rate}, {"count", -1}});
    plan_ = hub::plan_download(client_, cache_, {kTinyRepo, "main", {{"extra/*"}}}, fast_options());
    d_ = std::make_unique<hub::SnapshotDownload>(client_, cache_, plan_, fast_options());
    d_->start();
    ASSERT_TRUE(eventually([&] { return d_->progress()[0].bytes_done > bytes; }));
  }
  static constexpr const char* kBlob = "extra/blob.safetensors";
  const hub::HubClient client_ = client();
  const hub::HfCache cache_{cache_dir()};
  hub::DownloadPlan plan_;
  std::unique_ptr<hub::SnapshotDownload> d_;
};

TEST_F(ControlTest, PauseKeepsTheBytesAndResumeContinuesFromThem) {
  start(1000000, 300000);
  if (HasFatalFailure()) return;
  d_->pause();
  ASSERT_TRUE(eventually([&] { return d_->progress()[0].state == FileState::Paused; }));
  const int64_t at_pause = fs::file_size(incomplete(kBlob));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(static_cast<int64_t>(fs::file_size(incomplete(kBlob))), at_pause);
  EXPECT_FALSE(d_->finished());
  d_->resume();
  const auto r = d_->wait();
  ASSERT_TRUE(r.ok) << r.error;
  const std::string sha = hub_.tree(kTinyRepo).at(kBlob)["lfs"]["oid"];
  EXPECT_EQ(sha256sum(r.snapshot_dir / kBlob), sha);
  const auto gets = hub_.requests_for("/_cdn/" + sha);
  ASSERT_EQ(gets.size(), 2u);
  EXPECT_EQ(gets[1]["range"], "bytes=" + std::to_string(at_pause) + "-");
}

TEST_F(ControlTest, CancelStopsWithNothingUnderTheFinalName) {
  start(500000, 100000);
  if (HasFatalFailure()) return;
  d_->cancel();
  const auto r = d_->wait();
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.cancelled);
  EXPECT_EQ(r.files[0].state, FileState::Cancelled);
  expect_nothing_final(kBlob, plan_.commit);
  EXPECT_GT(fs::file_size(incomplete(kBlob)), 100000u);    // kept for a later resume
  EXPECT_FALSE(fs::exists(repo_dir() / "refs" / "main"));  // the ref waits for a whole snapshot
}

}  // namespace
}  // namespace inferdesk::test
