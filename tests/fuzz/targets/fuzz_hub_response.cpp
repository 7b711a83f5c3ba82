// Hugging Face Hub API replies, as the downloader receives them: the body through the search,
// model-info and tree-listing parsers, the headers through the error mapping (X-Error-Code, the
// status) and Retry-After, and every string the parsers accepted as a path, commit or ETag through
// the validators again (what reaches the disk must pass them). No network: the HubClient is only
// asked for its options. Input: the multi-file format of fuzz_support.h; text before the first
// "%%FILE" line is the body, a part "headers" holds an optional "HTTP/1.1 <status>" line and
// "Name: value" lines.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/hub/hub_client.h"
#include "core/hub/hub_json.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using namespace inferdesk;
using namespace inferdesk::hub;

HttpResponse make_response(const std::vector<fuzz::Part>& parts) {
  HttpResponse r;
  r.status = 200;
  r.body = std::string(parts.front().content);
  const fuzz::Part* headers = fuzz::find_part(parts, "headers");
  if (headers == nullptr) return r;
  std::string_view rest = headers->content;
  while (!rest.empty()) {
    const size_t eol = rest.find('\n');
    std::string_view line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.rfind("HTTP/", 0) == 0 && line.size() >= 12) {
      r.status = std::strtol(std::string(line.substr(9, 3)).c_str(), nullptr, 10);
      continue;
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    r.headers.add(std::string(line.substr(0, colon)), std::string(value));
  }
  return r;
}

void check_paths(const std::vector<RepoFile>& files) {
  for (const RepoFile& f : files) {
    if (!is_safe_repo_path(f.path)) __builtin_trap();  // accepted but unsafe as a path on disk
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto parts = fuzz::split_parts(input, "body", 2);
  const HttpResponse r = make_response(parts);
  fuzz::expect_typed_errors([&] { (void)parse_model_list(r.body, "search"); });
  fuzz::expect_typed_errors([&] { (void)parse_model_info(r.body, "model info"); });
  fuzz::expect_typed_errors([&] {
    std::vector<RepoFile> files;
    parse_tree_page(r.body, "tree", files);
    check_paths(files);
  });
  static const HubClient client(HubClientOptions{});
  fuzz::expect_typed_errors([&] { (void)http_error(r, client, "org/model", "config.json"); });
  (void)parse_retry_after(r.headers);
  if (auto etag = r.headers.get("ETag")) (void)is_safe_etag(normalize_etag(*etag));
  for (std::string_view s : {std::string_view(r.body), parts.front().content.substr(0, 128)}) {
    (void)is_safe_repo_path(s);
    (void)is_commit_hash(s);
    (void)is_valid_repo_id(s);
    (void)is_valid_revision(s);
  }
  return 0;
}
