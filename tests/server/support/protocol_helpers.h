// Shared by the protocol and load tests: the tiny-chat server they talk to, request builders,
// and reading figures out of /metrics.
#pragma once

#include <string>
#include <vector>

#include "tests/server/support/http_client.h"
#include "tests/server/support/server_process.h"

namespace inferdesk::test {

// tiny-chat on the CPU, one engine thread (the test machine has 2 cores shared with the client),
// served as "tiny" (and "tiny-alias"), context 256 by default, bodies up to 64 KiB.
inline std::vector<std::string> tiny_args(std::vector<std::string> extra = {}, int context = 256) {
  std::vector<std::string> a = {"--model",
                                ServerProcess::tiny_chat(),
                                "--threads",
                                "1",
                                "--max-model-len",
                                std::to_string(context),
                                "--max-body-kb",
                                "64",
                                "--served-model-name",
                                "tiny",
                                "--served-model-name",
                                "tiny-alias"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

inline Json user_chat(const std::string& content, Json extra = Json::object()) {
  Json j = {{"model", "tiny"}, {"messages", Json::array({{{"role", "user"}, {"content", content}}})}};
  for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
  return j;
}

inline Json completion(Json prompt, Json extra = Json::object()) {
  Json j = {{"model", "tiny"}, {"prompt", std::move(prompt)}};
  for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
  return j;
}

// The value of the first sample line that starts with `prefix` (name and the start of its
// labels, e.g. "vllm:num_requests_running{"); -1 when there is none.
inline double metric(const std::string& text, const std::string& prefix, const std::string& contains = "") {
  size_t at = 0;
  while ((at = text.find(prefix, at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') {
      const size_t end = text.find('\n', at);
      const std::string line = text.substr(at, end - at);
      if (contains.empty() || line.find(contains) != std::string::npos)
        return std::stod(line.substr(line.rfind(' ') + 1));
    }
    at += prefix.size();
  }
  return -1;
}

}  // namespace inferdesk::test
