#include "tests/server/support/server_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace inferdesk::test {

std::string ServerProcess::tiny_chat() { return std::string(INFERDESK_SOURCE_DIR) + "/tests/golden/models/tiny-chat"; }
std::string ServerProcess::cli() { return INFERDESK_CLI; }

ServerProcess::ServerProcess(const std::vector<std::string>& args, std::chrono::seconds timeout) {
  static int counter = 0;
  log_path_ = std::string(INFERDESK_BINARY_DIR) + "/server_test_" + std::to_string(getpid()) + "_" +
              std::to_string(counter++) + ".log";
  std::vector<std::string> argv = {cli(), "serve", "--host", "127.0.0.1", "--port", "0"};
  argv.insert(argv.end(), args.begin(), args.end());
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    const int fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 2);
      dup2(fd, 1);
    }
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const std::regex listening("listening on (http://127\\.0\\.0\\.1:([0-9]+))");
  while (std::chrono::steady_clock::now() < deadline) {
    std::smatch m;
    const std::string text = log();
    if (std::regex_search(text, m, listening)) {
      url_ = m[1];
      port_ = std::stoi(m[2]);
      return;
    }
    if (!running()) throw std::runtime_error("the server exited before listening:\n" + text);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw std::runtime_error("the server did not report its port:\n" + log());
}

ServerProcess::~ServerProcess() {
  if (running()) {
    kill(pid_, SIGKILL);
    wait_exit(std::chrono::seconds(5));
  }
  std::remove(log_path_.c_str());
}

std::string ServerProcess::log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool ServerProcess::running() {
  if (status_ >= 0) return false;
  int st = 0;
  const pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == 0) return true;
  status_ = r == pid_ ? (WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st)) : 255;
  return false;
}

void ServerProcess::signal(int sig) {
  if (running()) kill(pid_, sig);
}

int ServerProcess::wait_exit(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running()) {
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status_;
}

long ServerProcess::rss_kb() const {
  std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  return -1;
}

}  // namespace inferdesk::test
