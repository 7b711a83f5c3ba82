// A real `inferdesk-cli serve` process for the server tests: started on 127.0.0.1 with --port 0,
// its stderr in a log file from which the bound port is read; stopped by a signal and reaped.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace inferdesk::test {

class ServerProcess {
 public:
  // args: everything after `serve` (the model, limits); --port 0 and --host 127.0.0.1 are added.
  // Throws std::runtime_error when the server does not report its port within `timeout`.
  explicit ServerProcess(const std::vector<std::string>& args, std::chrono::seconds timeout = std::chrono::seconds(60));
  ~ServerProcess();  // SIGKILL if still running
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  const std::string& url() const { return url_; }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string log() const;
  bool running();
  void signal(int sig);
  // Waits for the process to exit; returns its exit status (128 + signal when killed), or -1 on
  // timeout.
  int wait_exit(std::chrono::milliseconds timeout);
  long rss_kb() const;  // VmRSS from /proc

  // tiny-chat's folder and the CLI binary, from the build's compile definitions.
  static std::string tiny_chat();
  static std::string cli();

 private:
  pid_t pid_ = -1;
  std::string log_path_, url_;
  int port_ = 0;
  int status_ = -1;
};

}  // namespace inferdesk::test
