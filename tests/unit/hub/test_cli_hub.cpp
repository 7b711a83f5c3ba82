// The real inferdesk-cli against the local Hub: what people see (progress, messages, search) and
// the resume after the process is killed with SIGKILL in the middle of a file.
#include <signal.h>

#include <thread>

#include "tests/unit/hub/hub_fixture.h"

namespace inferdesk::test {
namespace {

class CliHubTest : public HubTest {
 protected:
  // The CLI with a private HOME, HF_HOME and XDG config, so no token or cache of the machine leaks in.
  std::map<std::string, std::string> env(std::map<std::string, std::string> extra = {}) const {
    std::map<std::string, std::string> e = {{"HF_ENDPOINT", hub_.url()},
                                            {"HOME", (tmp_.path() / "home").string()},
                                            {"HF_HOME", (tmp_.path() / "hf").string()},
                                            {"XDG_CONFIG_HOME", (tmp_.path() / "config").string()},
                                            {"XDG_CACHE_HOME", ""},
                                            {"HF_HUB_CACHE", ""},
                                            {"HF_TOKEN", ""},
                                            {"HF_HUB_OFFLINE", ""},
                                            {"no_proxy", "*"}};
    for (auto& [k, v] : extra) e[k] = v;
    return e;
  }
  std::unique_ptr<Process> cli(std::vector<std::string> args, std::map<std::string, std::string> extra = {}) const {
    args.insert(args.begin(), INFERDESK_CLI);
    return std::make_unique<Process>(args, env(std::move(extra)));
  }
  std::vector<std::string> download_args(const std::string& repo, std::vector<std::string> more = {}) const {
    std::vector<std::string> a = {"download", repo, "--cache-dir", cache_dir().string()};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
};

TEST_F(CliHubTest, DownloadPrintsTheSnapshotFolderAndALinePerFile) {
  auto p = cli(download_args(kTinyRepo));
  ASSERT_EQ(p->wait(), 0) << p->err();
  const std::string out = p->out();
  const fs::path snapshot = out.substr(0, out.find('\n'));
  EXPECT_EQ(snapshot.parent_path(), repo_dir() / "snapshots");
  EXPECT_EQ(read_file(snapshot / "config.json"), source("config.json"));
  const std::string err = p->err();
  EXPECT_NE(err.find("[done] model.safetensors  0.84 MB"), std::string::npos) << err;
  EXPECT_NE(err.find("skipped pytorch_model.bin: pickle weights are never downloaded"), std::string::npos) << err;
  auto again = cli(download_args(kTinyRepo));
  ASSERT_EQ(again->wait(), 0);
  EXPECT_EQ(again->out(), out);
  EXPECT_NE(again->err().find("(from the cache)"), std::string::npos);
}

TEST_F(CliHubTest, ResumesAfterSigkillWithoutDownloadingTwice) {
  const std::string sha = hub_.tree(kTinyRepo).at("extra/blob.safetensors")["lfs"]["oid"];
  hub_.fault({{"path", "extra/blob.safetensors"}, {"kind", "trickle"}, {"rate", 800000}});
  auto first = cli(download_args(kTinyRepo, {"--include", "extra/*"}));
  const fs::path part = incomplete("extra/blob.safetensors");
  bool started = false;
  for (int i = 0; i < 2000 && !started; ++i) {
    std::error_code ec;
    started = fs::file_size(part, ec) > 1000000 && !ec;
    if (!started) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(started) << first->err();
  first->kill_now();
  ASSERT_EQ(first->wait(), 128 + SIGKILL);
  const auto on_disk = static_cast<int64_t>(fs::file_size(part));
  ASSERT_GT(on_disk, 1000000);
  ASSERT_LT(on_disk, 4 * 1024 * 1024);
  expect_nothing_final("extra/blob.safetensors", client().model_info(kTinyRepo).sha);

  auto second = cli(download_args(kTinyRepo, {"--include", "extra/*"}));
  ASSERT_EQ(second->wait(), 0) << second->err();
  const auto gets = hub_.requests_for("/_cdn/" + sha);
  ASSERT_EQ(gets.size(), 2u);
  EXPECT_EQ(gets[1]["range"], "bytes=" + std::to_string(on_disk) + "-");
  EXPECT_EQ(gets[1]["from"], on_disk);
  const std::string out = second->out();
  EXPECT_EQ(sha256sum(fs::path(out.substr(0, out.find('\n'))) / "extra/blob.safetensors"), sha);
  EXPECT_FALSE(fs::exists(part));
}

TEST_F(CliHubTest, GatedRepoFailsWithTheRequestAccessMessage) {
  auto p = cli(download_args(kGatedRepo));
  EXPECT_EQ(p->wait(), 1);
  EXPECT_NE(p->err().find("this model is gated: request access at " + hub_.url() + "/" + kGatedRepo +
                          ", then add a token"),
            std::string::npos)
      << p->err();
  EXPECT_TRUE(p->out().empty());
}

TEST_F(CliHubTest, TokenComesFromFlagEnvOrHuggingfaceHubsTokenFile) {
  auto from_env = cli(download_args(kGatedRepo), {{"HF_TOKEN", kGrantedToken}});
  EXPECT_EQ(from_env->wait(), 0) << from_env->err();
  fs::remove_all(cache_dir());
  fs::create_directories(tmp_.path() / "hf");
  std::ofstream(tmp_.path() / "hf" / "token") << kGrantedToken << "\n";
  auto from_file = cli(download_args(kGatedRepo));
  EXPECT_EQ(from_file->wait(), 0) << from_file->err();
  fs::remove_all(cache_dir());
  // --token wins over both: a wrong one fails although HF_TOKEN and the file are right.
  auto flag = cli(download_args(kGatedRepo, {"--token", "hf_wrong"}), {{"HF_TOKEN", kGrantedToken}});
  EXPECT_EQ(flag->wait(), 1);
  EXPECT_NE(flag->err().find("with the account of your token"), std::string::npos) << flag->err();
}

TEST_F(CliHubTest, HfHubCacheAndHfHomeChooseTheCache) {
  const fs::path hub_cache = tmp_.path() / "hub-cache";
  auto p = cli({"download", kTinyRepo, "--include", "config.json"}, {{"HF_HUB_CACHE", hub_cache.string()}});
  ASSERT_EQ(p->wait(), 0) << p->err();
  EXPECT_TRUE(fs::exists(hub_cache / "models--inferdesk-test--tiny-chat" / "refs" / "main"));
  auto q = cli({"download", kTinyRepo, "--include", "config.json"});
  ASSERT_EQ(q->wait(), 0) << q->err();
  EXPECT_TRUE(fs::exists(tmp_.path() / "hf" / "hub" / "models--inferdesk-test--tiny-chat" / "refs" / "main"));
}

TEST_F(CliHubTest, OfflineModeUsesTheCacheAndSaysWhenItCannot) {
  auto none = cli(download_args(kTinyRepo), {{"HF_HUB_OFFLINE", "1"}});
  EXPECT_EQ(none->wait(), 1);
  EXPECT_NE(none->err().find("HF_HUB_OFFLINE is set"), std::string::npos) << none->err();
  auto online = cli(download_args(kTinyRepo));
  ASSERT_EQ(online->wait(), 0);
  hub_.reset();
  auto offline = cli(download_args(kTinyRepo), {{"HF_HUB_OFFLINE", "1"}});
  ASSERT_EQ(offline->wait(), 0) << offline->err();
  EXPECT_EQ(offline->out(), online->out());
  EXPECT_TRUE(hub_.requests().empty());
}

TEST_F(CliHubTest, FailureExitsNonZeroWithTheReason) {
  hub_.fault({{"path", "model.safetensors"}, {"kind", "grow"}, {"extra", 1}, {"count", -1}});
  auto p = cli(download_args(kTinyRepo));
  EXPECT_EQ(p->wait(), 1);
  const std::string err = p->err();
  EXPECT_NE(err.find("[failed] model.safetensors"), std::string::npos) << err;
  EXPECT_NE(err.find("1 of 9 files failed; model.safetensors: model.safetensors changed size"), std::string::npos)
      << err;
  EXPECT_TRUE(p->out().empty());
  auto missing = cli(download_args(kTinyRepo, {"--revision", "no-such-branch"}));
  EXPECT_EQ(missing->wait(), 1);
  EXPECT_NE(missing->err().find("revision not found"), std::string::npos) << missing->err();
}

TEST_F(CliHubTest, SearchPrintsDownloadsLikesGatedAndSupport) {
  auto p = cli({"search", "inferdesk", "--limit", "5"});
  ASSERT_EQ(p->wait(), 0) << p->err();
  const std::string out = p->out();
  EXPECT_NE(out.find("MODEL"), std::string::npos);
  auto row = [&](const std::string& id) {
    return out.substr(out.find(id), out.find('\n', out.find(id)) - out.find(id));
  };
  EXPECT_NE(row(kTinyRepo).find("1,234"), std::string::npos) << out;
  EXPECT_NE(row(kTinyRepo).find("yes (qwen2)"), std::string::npos) << out;
  EXPECT_NE(row(kGatedRepo).find("manual"), std::string::npos) << out;
  EXPECT_NE(row(kPickleRepo).find("no (gpt2)"), std::string::npos) << out;
  EXPECT_LT(out.find(kTinyRepo), out.find(kGatedRepo));  // by downloads
  auto json = cli({"search", "tiny", "--json"});
  ASSERT_EQ(json->wait(), 0);
  const auto j = nlohmann::json::parse(json->out());
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["supported"], "yes");
  EXPECT_EQ(j[0]["downloads"], 1234);
}

}  // namespace
}  // namespace inferdesk::test
