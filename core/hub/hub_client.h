// The Hugging Face Hub's HTTP API as huggingface_hub uses it: search, model info, the file tree,
// README, and HEAD on resolve/ for a file's download metadata. Stateless apart from its options, so
// one client may serve every thread of a download. Error replies become HubErrors whose message
// says what to do (hub_error.h); the endpoint comes from the options (resolve_endpoint() reads
// HF_ENDPOINT at the program's edge).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/hub/http.h"
#include "core/hub/hub_env.h"
#include "core/hub/hub_error.h"
#include "core/hub/hub_types.h"

namespace inferdesk::hub {

struct HubClientOptions {
  std::string endpoint = kDefaultEndpoint;  // no trailing '/'
  std::string token;                        // sent as a Bearer token to the endpoint's host only
  HttpOptions http;
  int64_t max_api_bytes = 32 << 20;  // a larger API reply is BadResponse
  int64_t max_readme_bytes = 2 << 20;
  int max_tree_pages = 200;  // Link: rel="next" pages of one file listing
};

struct SearchQuery {
  std::string text;
  int limit = 20;                          // 1..1000
  std::string filter = "text-generation";  // "" for every task
  std::string sort = "downloads";
};

class HubClient {
 public:
  explicit HubClient(HubClientOptions options);

  const HubClientOptions& options() const { return options_; }
  const std::string& endpoint() const { return options_.endpoint; }

  std::vector<ModelSummary> search(const SearchQuery& query) const;
  ModelInfo model_info(const std::string& repo_id, const std::string& revision = "main") const;
  // Every file at `revision` (directories dropped), following the listing's pages.
  std::vector<RepoFile> list_files(const std::string& repo_id, const std::string& revision) const;
  // README.md at `revision`; "" when the repository has none.
  std::string readme(const std::string& repo_id, const std::string& revision = "main") const;
  // A small file's text at `revision` (config.json for the desktop app's fit check, before any
  // download); nullopt when the repository has no such file, BadResponse past `max_bytes`.
  std::optional<std::string> small_file(const std::string& repo_id, const std::string& revision,
                                        const std::string& path, int64_t max_bytes = 1 << 20) const;
  // HEAD resolve/{revision}/{path}, following only same-host (relative) redirects as huggingface_hub
  // does: the metadata comes from the reply that points at the bytes.
  FileMetadata file_metadata(const std::string& repo_id, const std::string& revision, const std::string& path) const;

  std::string resolve_url(const std::string& repo_id, const std::string& revision, const std::string& path) const;
  // "<endpoint>/<repo_id>": the model's page, where gated access is requested.
  std::string model_page(const std::string& repo_id) const { return options_.endpoint + "/" + repo_id; }
  // The request headers for `url`: the token only when the URL is on the endpoint's host (a CDN
  // redirect target gets none).
  std::vector<std::string> headers_for(const std::string& url) const;

 private:
  HttpResponse get_api(const std::string& url, const std::string& repo_id, const std::string& what) const;

  HubClientOptions options_;
};

// The HubError for a failed reply: X-Error-Code (GatedRepo, RepoNotFound, RevisionNotFound,
// EntryNotFound) first, then the status. `file` is the file asked for ("" for API calls).
HubError http_error(const HttpResponse& r, const HubClient& client, const std::string& repo_id,
                    const std::string& file);
// Retry-After as seconds (the delay-seconds form; an HTTP date is not honoured).
std::optional<double> parse_retry_after(const HttpHeaders& headers);

}  // namespace inferdesk::hub
