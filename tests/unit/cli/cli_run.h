// Running the real inferdesk-cli binary from a test: exit status, stdout and stderr.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace inferdesk::test {

struct CliRun {
  int status = -1;
  std::string out;
  std::string err;
};

// A path under the build tree no other test uses (tests of this binary may run concurrently with
// other processes of the same test).
inline std::string cli_temp_path(const std::string& stem) {
  static std::atomic<int> counter{0};
  return std::string(INFERDESK_BINARY_DIR) + "/" + stem + "_" + std::to_string(getpid()) + "_" +
         std::to_string(counter++);
}

inline std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `inferdesk-cli ARGS` through the shell (ARGS may quote).
inline CliRun run_cli(const std::string& args) {
  const std::string err_path = cli_temp_path("cli_stderr");
  const std::string cmd = std::string(INFERDESK_CLI) + " " + args + " 2>" + err_path;
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.err = read_text_file(err_path);
  std::remove(err_path.c_str());
  return r;
}

}  // namespace inferdesk::test
