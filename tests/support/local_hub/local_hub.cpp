#include "tests/support/local_hub/local_hub.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace inferdesk::test {

namespace fs = std::filesystem;

namespace {

fs::path unique_dir(const std::string& stem) {
  static std::atomic<int> counter{0};
  fs::path p = fs::path(INFERDESK_BINARY_DIR) / "hub-tests" /
               (stem + "_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

size_t collect(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

std::pair<long, std::string> http_request(const std::string& url, const std::string* post_body) {
  static const CURLcode init = curl_global_init(CURL_GLOBAL_DEFAULT);
  (void)init;
  CURL* c = curl_easy_init();
  std::string body;
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
  curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
  if (post_body) {
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, post_body->c_str());
  }
  const CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(c);
  if (rc != CURLE_OK) throw std::runtime_error("test HTTP request to " + url + " failed: " + curl_easy_strerror(rc));
  return {status, body};
}

}  // namespace

std::pair<long, std::string> http_get(const std::string& url) { return http_request(url, nullptr); }

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string sha256sum(const fs::path& p) {
  const std::string cmd = "sha256sum '" + p.string() + "'";
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return "";
  char buf[128] = {0};
  const size_t n = fread(buf, 1, 64, f);
  pclose(f);
  return std::string(buf, n);
}

TempDir::TempDir() : path_(unique_dir("tmp")) {}
TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

LocalHub::LocalHub() {
  dir_ = unique_dir("local_hub");
  const fs::path port_file = dir_ / "port";
  const std::string script = std::string(INFERDESK_SOURCE_DIR) + "/tests/support/local_hub/local_hub.py";
  const std::string model = std::string(INFERDESK_SOURCE_DIR) + "/tests/golden/models/tiny-chat";
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    const int fd = open((dir_ / "hub.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) dup2(fd, 2);
    execlp("python3", "python3", script.c_str(), "--model", model.c_str(), "--port-file", port_file.c_str(),
           static_cast<char*>(nullptr));
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string port = read_file(port_file);
    if (!port.empty()) {
      url_ = "http://127.0.0.1:" + port;
      return;
    }
    int st = 0;
    if (waitpid(pid_, &st, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("local_hub.py exited: " + read_file(dir_ / "hub.log"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw std::runtime_error("local_hub.py did not start: " + read_file(dir_ / "hub.log"));
}

LocalHub::~LocalHub() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

void LocalHub::fault(const nlohmann::json& spec) {
  const std::string body = spec.dump();
  if (http_request(url_ + "/_control/fault", &body).first != 200) throw std::runtime_error("fault not accepted");
}

void LocalHub::reset() {
  const std::string body = "{}";
  http_request(url_ + "/_control/reset", &body);
}

void LocalHub::tree_page_size(int n) {
  const std::string body = nlohmann::json{{"size", n}}.dump();
  http_request(url_ + "/_control/tree_page_size", &body);
}

nlohmann::json LocalHub::requests() const {
  return nlohmann::json::parse(http_get(url_ + "/_control/requests").second);
}

std::vector<nlohmann::json> LocalHub::requests_for(const std::string& suffix, const std::string& method) const {
  std::vector<nlohmann::json> out;
  for (const auto& r : requests()) {
    const std::string path = r["path"];
    if (path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0 &&
        (method.empty() || r["method"] == method))
      out.push_back(r);
  }
  return out;
}

std::map<std::string, nlohmann::json> LocalHub::tree(const std::string& repo, const std::string& rev) const {
  std::map<std::string, nlohmann::json> out;
  for (const auto& e :
       nlohmann::json::parse(http_get(url_ + "/api/models/" + repo + "/tree/" + rev + "?recursive=1").second))
    if (e["type"] == "file") out[e["path"]] = e;
  return out;
}

Process::Process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
  const fs::path dir = unique_dir("proc");
  out_ = dir / "stdout";
  err_ = dir / "stderr";
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    for (const auto& [k, v] : env) {
      if (v.empty())
        unsetenv(k.c_str());
      else
        setenv(k.c_str(), v.c_str(), 1);
    }
    const int o = open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o >= 0) dup2(o, 1);
    if (e >= 0) dup2(e, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
}

Process::~Process() {
  if (running()) {
    kill(pid_, SIGKILL);
    wait(std::chrono::seconds(10));
  }
  std::error_code ec;
  fs::remove_all(out_.parent_path(), ec);
}

bool Process::running() {
  if (status_ >= 0) return false;
  int st = 0;
  if (waitpid(pid_, &st, WNOHANG) != pid_) return true;
  status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return false;
}

void Process::kill_now() {
  if (running()) kill(pid_, SIGKILL);
}

int Process::wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running()) {
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status_;
}

std::string Process::out() const { return read_file(out_); }
std::string Process::err() const { return read_file(err_); }

}  // namespace inferdesk::test
