// A local Hub and an empty cache per test, and the library's download in one call.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/hub/download_plan.h"
#include "core/hub/hub_json.h"
#include "core/hub/snapshot_download.h"
#include "tests/support/local_hub/local_hub.h"

namespace inferdesk::test {

namespace fs = std::filesystem;

class HubTest : public ::testing::Test {
 protected:
  HubTest() {
    setenv("no_proxy", "*", 1);  // a proxy from the environment must not see loopback tests
  }

  hub::HubClient client(const std::string& token = "") const {
    hub::HubClientOptions o;
    o.endpoint = hub_.url();
    o.token = token;
    return hub::HubClient(o);
  }

  // Short delays: the faults are meant to be recovered from in well under a second.
  static hub::DownloadOptions fast_options() {
    hub::DownloadOptions o;
    o.retry.initial_delay = std::chrono::milliseconds(20);
    o.retry.max_delay = std::chrono::milliseconds(200);
    o.progress_interval = std::chrono::milliseconds(20);
    return o;
  }

  hub::DownloadResult download(const std::string& repo, std::vector<std::string> include = {},
                               hub::DownloadOptions options = fast_options(), const std::string& rev = "main",
                               const std::string& token = "") {
    const hub::HubClient c = client(token);
    const hub::HfCache cache(cache_dir());
    const hub::DownloadPlan plan = hub::plan_download(c, cache, {repo, rev, hub::FileFilter{std::move(include)}},
                                                      options);
    hub::SnapshotDownload d(c, cache, plan, options, {[this](const hub::FileProgress& p) { record(p); }, {}});
    d.start();
    return d.wait();
  }

  void record(const hub::FileProgress& p) {
    std::lock_guard lock(seen_mutex_);
    seen_.push_back(p);
  }

  std::vector<hub::FileProgress> seen(const std::string& path) {
    std::lock_guard lock(seen_mutex_);
    std::vector<hub::FileProgress> out;
    for (const auto& p : seen_)
      if (p.path == path) out.push_back(p);
    return out;
  }

  static const hub::FileProgress& file(const hub::DownloadResult& r, const std::string& path) {
    for (const auto& f : r.files)
      if (f.path == path) return f;
    throw std::runtime_error("no " + path + " in the result");
  }

  fs::path cache_dir() const { return tmp_.path() / "cache"; }
  fs::path repo_dir(const std::string& repo = kTinyRepo) const { return cache_dir() / hub::repo_folder_name(repo); }
  fs::path blob(const std::string& path, const std::string& repo = kTinyRepo, const std::string& rev = "main") const {
    const auto t = hub_.tree(repo, rev).at(path);
    return repo_dir(repo) / "blobs" /
           (t.contains("lfs") ? t["lfs"]["oid"].get<std::string>() : t["oid"].get<std::string>());
  }
  fs::path incomplete(const std::string& path) const { return blob(path).string() + ".incomplete"; }
  std::string source(const std::string& name) const {
    return read_file(fs::path(INFERDESK_SOURCE_DIR) / "tests/golden/models/tiny-chat" / name);
  }
  // No file of the repo is under a final name: no blob, no snapshot link, for `path`.
  void expect_nothing_final(const std::string& path, const std::string& commit) const {
    EXPECT_FALSE(fs::exists(blob(path))) << path;
    EXPECT_FALSE(fs::exists(fs::symlink_status(repo_dir() / "snapshots" / commit / path))) << path;
  }

  LocalHub hub_;
  TempDir tmp_;
  std::mutex seen_mutex_;
  std::vector<hub::FileProgress> seen_;
};

}  // namespace inferdesk::test
