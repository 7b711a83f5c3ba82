// Test helpers for the Hub downloader: the local Hub (local_hub.py, a real HTTP server on
// 127.0.0.1 with fault injection) started per test, and a child process with its own environment
// (the real inferdesk-cli, killed with SIGKILL when a test wants it). Shared with the GUI's wizard
// tests, which walk the same fixture repositories.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace inferdesk::test {

inline constexpr const char* kTinyRepo = "inferdesk-test/tiny-chat";
inline constexpr const char* kGatedRepo = "inferdesk-test/gated-model";
inline constexpr const char* kPickleRepo = "inferdesk-test/pickle-only";
inline constexpr const char* kGrantedToken = "hf_granted_token";  // the gated repo's valid token

class LocalHub {
 public:
  // Starts python3 local_hub.py over tests/golden/models/tiny-chat; throws when it does not listen
  // within 20 s.
  LocalHub();
  ~LocalHub();
  LocalHub(const LocalHub&) = delete;
  LocalHub& operator=(const LocalHub&) = delete;

  const std::string& url() const { return url_; }  // http://127.0.0.1:PORT
  void fault(const nlohmann::json& spec);          // POST /_control/fault
  void reset();                                    // faults and request log
  void tree_page_size(int n);
  nlohmann::json requests() const;  // every request seen, in order
  // The requests whose path ends with `suffix` (and of `method`, unless "").
  std::vector<nlohmann::json> requests_for(const std::string& suffix, const std::string& method = "GET") const;
  // The raw tree listing (Python's sizes and digests), by path.
  std::map<std::string, nlohmann::json> tree(const std::string& repo, const std::string& rev = "main") const;

 private:
  pid_t pid_ = -1;
  std::string url_;
  std::filesystem::path dir_;
};

// HTTP GET of a URL (the test's own view of the server): status and body.
std::pair<long, std::string> http_get(const std::string& url);

// A child process: argv, with `env` set on top of (or, value "", removed from) the test's
// environment; stdout and stderr to files.
class Process {
 public:
  Process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);
  ~Process();  // SIGKILL if still running
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  bool running();
  void kill_now();  // SIGKILL
  // Exit status (128 + signal when killed), or -1 on timeout.
  int wait(std::chrono::milliseconds timeout = std::chrono::seconds(120));
  std::string out() const;
  std::string err() const;

 private:
  pid_t pid_ = -1;
  int status_ = -1;
  std::filesystem::path out_, err_;
};

// A fresh empty folder under the build tree, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

std::string read_file(const std::filesystem::path& p);
// sha256sum's answer for a file (coreutils: an implementation independent of ours).
std::string sha256sum(const std::filesystem::path& p);

}  // namespace inferdesk::test
