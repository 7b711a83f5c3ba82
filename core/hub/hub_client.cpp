#include "core/hub/hub_client.h"

#include <cstdlib>

#include "core/hub/hub_error.h"
#include "core/hub/hub_json.h"

namespace inferdesk::hub {

namespace {

void check_repo(const std::string& repo_id, const std::string& revision) {
  if (!is_valid_repo_id(repo_id))
    throw HubError(HubErrorKind::RepoNotFound, "'" + repo_id + "' is not a repository id (expected ORG/NAME)");
  if (!is_valid_revision(revision))
    throw HubError(HubErrorKind::RevisionNotFound, "'" + revision + "' is not a valid revision");
}

std::string origin_of(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const size_t slash = url.find('/', scheme + 3);
  return slash == std::string::npos ? url : url.substr(0, slash);
}

// The URL of Link: <...>; rel="next", when there is one.
std::string next_page(const HttpHeaders& h) {
  const auto link = h.get("Link");
  if (!link) return "";
  size_t pos = 0;
  while ((pos = link->find('<', pos)) != std::string::npos) {
    const size_t end = link->find('>', pos);
    if (end == std::string::npos) return "";
    const size_t next = link->find('<', end);
    const std::string params = link->substr(end, next == std::string::npos ? std::string::npos : next - end);
    if (params.find("rel=\"next\"") != std::string::npos || params.find("rel=next") != std::string::npos)
      return link->substr(pos + 1, end - pos - 1);
    pos = end;
  }
  return "";
}

std::string gated_message(const HubClient& c, const std::string& repo_id) {
  if (c.options().token.empty())
    return "this model is gated: request access at " + c.model_page(repo_id) +
           ", then add a token (HF_TOKEN, --token, or `huggingface-cli login`)";
  return "this model is gated: request access at " + c.model_page(repo_id) +
         " with the account of your token (access may take a while to be granted), then try again";
}

}  // namespace

std::optional<double> parse_retry_after(const HttpHeaders& headers) {
  const auto v = headers.get("Retry-After");
  if (!v || v->empty()) return std::nullopt;
  char* end = nullptr;
  const double s = std::strtod(v->c_str(), &end);
  if (end == v->c_str() || *end != '\0' || s < 0) return std::nullopt;
  return s;
}

HubError http_error(const HttpResponse& r, const HubClient& client, const std::string& repo_id,
                    const std::string& file) {
  const int status = static_cast<int>(r.status);
  const std::string code = r.headers.get("X-Error-Code").value_or("");
  const std::string server_msg = r.headers.get("X-Error-Message").value_or("");
  const std::string what = file.empty() ? repo_id : file + " in " + repo_id;
  const std::string suffix = " (HTTP " + std::to_string(status) + (server_msg.empty() ? "" : ": " + server_msg) + ")";
  if (code == "GatedRepo") return HubError(HubErrorKind::Gated, gated_message(client, repo_id), status);
  if (code == "RevisionNotFound")
    return HubError(HubErrorKind::RevisionNotFound, "revision not found in " + repo_id + suffix, status);
  if (code == "EntryNotFound") return HubError(HubErrorKind::EntryNotFound, "no file " + what + suffix, status);
  if (code == "RepoNotFound" || (status == 404 && file.empty()))
    return HubError(HubErrorKind::RepoNotFound,
                    "repository " + repo_id + " not found on " + client.endpoint() +
                        " (check the name; if it is private, add a token)" + suffix,
                    status);
  if (status == 404) return HubError(HubErrorKind::EntryNotFound, "no file " + what + suffix, status);
  if (status == 401)
    return HubError(HubErrorKind::Unauthorized,
                    client.options().token.empty()
                        ? client.endpoint() + " wants a token for " + repo_id + ": add one (HF_TOKEN or --token)" +
                              suffix
                        : client.endpoint() + " refused the token for " + repo_id + ": check it" + suffix,
                    status);
  if (status == 403) return HubError(HubErrorKind::Forbidden, "access to " + what + " is forbidden" + suffix, status);
  if (status == 429)
    return HubError(HubErrorKind::RateLimited, client.endpoint() + " is rate-limiting us" + suffix, status,
                    parse_retry_after(r.headers));
  if (status >= 500) return HubError(HubErrorKind::Server, client.endpoint() + " failed on " + what + suffix, status);
  return HubError(HubErrorKind::BadResponse, "unexpected reply for " + what + suffix, status);
}

HubClient::HubClient(HubClientOptions options) : options_(std::move(options)) {
  while (!options_.endpoint.empty() && options_.endpoint.back() == '/') options_.endpoint.pop_back();
}

std::vector<std::string> HubClient::headers_for(const std::string& url) const {
  std::vector<std::string> h = {"Accept-Encoding: identity"};
  if (!options_.token.empty() && url_authority(url) == url_authority(options_.endpoint))
    h.push_back("Authorization: Bearer " + options_.token);
  return h;
}

HttpResponse HubClient::get_api(const std::string& url, const std::string& repo_id, const std::string& what) const {
  HttpRequest req;
  req.url = url;
  req.headers = headers_for(url);
  req.follow_redirects = true;
  req.max_body = options_.max_api_bytes;
  HttpResponse r = http_fetch(options_.http, req);
  if (r.status != 200) throw http_error(r, *this, repo_id, what);
  return r;
}

std::vector<ModelSummary> HubClient::search(const SearchQuery& q) const {
  if (q.limit < 1 || q.limit > 1000) throw HubError(HubErrorKind::BadResponse, "search limit must be 1..1000");
  std::string url = options_.endpoint + "/api/models?search=" + url_encode(q.text);
  if (!q.filter.empty()) url += "&filter=" + url_encode(q.filter);
  if (!q.sort.empty()) url += "&sort=" + url_encode(q.sort) + "&direction=-1";
  url += "&limit=" + std::to_string(q.limit);
  // Only what a result row shows (huggingface_hub's `expand`): downloads, likes, gated, config.
  for (const char* field : {"downloads", "likes", "gated", "private", "pipeline_tag", "library_name", "config"})
    url += std::string("&expand=") + field;
  const HttpResponse r = get_api(url, "search", "");
  return parse_model_list(r.body, "model search reply");
}

ModelInfo HubClient::model_info(const std::string& repo_id, const std::string& revision) const {
  check_repo(repo_id, revision);
  const std::string url = options_.endpoint + "/api/models/" + repo_id + "/revision/" + url_encode(revision);
  const HttpResponse r = get_api(url, repo_id, "");
  return parse_model_info(r.body, "model info of " + repo_id);
}

std::vector<RepoFile> HubClient::list_files(const std::string& repo_id, const std::string& revision) const {
  check_repo(repo_id, revision);
  std::string url = options_.endpoint + "/api/models/" + repo_id + "/tree/" + url_encode(revision) + "?recursive=1";
  std::vector<RepoFile> files;
  for (int page = 0; !url.empty(); ++page) {
    if (page >= options_.max_tree_pages)
      throw HubError(HubErrorKind::BadResponse, "the file list of " + repo_id + " has more than " +
                                                    std::to_string(options_.max_tree_pages) + " pages");
    const HttpResponse r = get_api(url, repo_id, "");
    parse_tree_page(r.body, "file list of " + repo_id, files);
    url = next_page(r.headers);
    // A next page elsewhere would take our token (and trust) to another host.
    if (!url.empty() && url_authority(url) != url_authority(options_.endpoint))
      throw HubError(HubErrorKind::BadResponse, "the file list of " + repo_id + " points to another host: " + url);
  }
  return files;
}

std::string HubClient::readme(const std::string& repo_id, const std::string& revision) const {
  return small_file(repo_id, revision, "README.md", options_.max_readme_bytes).value_or("");
}

std::optional<std::string> HubClient::small_file(const std::string& repo_id, const std::string& revision,
                                                 const std::string& path, int64_t max_bytes) const {
  check_repo(repo_id, revision);
  if (!is_safe_repo_path(path)) throw HubError(HubErrorKind::EntryNotFound, "not a repository path: " + path);
  HttpRequest req;
  req.url = resolve_url(repo_id, revision, path);
  req.headers = headers_for(req.url);
  req.follow_redirects = true;
  req.max_body = max_bytes;
  HttpResponse r = http_fetch(options_.http, req);
  if (r.status == 200) return std::move(r.body);
  HubError e = http_error(r, *this, repo_id, path);
  if (e.kind() == HubErrorKind::EntryNotFound) return std::nullopt;
  throw e;
}

std::string HubClient::resolve_url(const std::string& repo_id, const std::string& revision,
                                   const std::string& path) const {
  return options_.endpoint + "/" + repo_id + "/resolve/" + url_encode(revision) + "/" + url_encode(path, true);
}

FileMetadata HubClient::file_metadata(const std::string& repo_id, const std::string& revision,
                                      const std::string& path) const {
  check_repo(repo_id, revision);
  std::string url = resolve_url(repo_id, revision, path);
  for (int hop = 0; hop < 5; ++hop) {
    HttpRequest req;
    req.method = "HEAD";
    req.url = url;
    req.headers = headers_for(url);
    const HttpResponse r = http_fetch(options_.http, req);
    const std::string location = r.headers.get("Location").value_or("");
    const bool redirect = r.status >= 300 && r.status < 400;
    if (redirect && location.rfind("/", 0) == 0) {  // a renamed repo: same host, ask again
      url = origin_of(url) + location;
      continue;
    }
    if (r.status != 200 && !redirect) throw http_error(r, *this, repo_id, path);
    FileMetadata m;
    m.commit = r.headers.get("X-Repo-Commit").value_or("");
    m.etag = normalize_etag(r.headers.get("X-Linked-Etag").value_or(r.headers.get("ETag").value_or("")));
    const auto size = r.headers.get("X-Linked-Size");
    const auto length = redirect ? std::nullopt : r.headers.get("Content-Length");
    const std::string size_text = size ? *size : length.value_or("");
    char* end = nullptr;
    m.size = size_text.empty() ? -1 : std::strtoll(size_text.c_str(), &end, 10);
    if (!size_text.empty() && *end != '\0') m.size = -1;
    m.location = redirect ? location : url;
    if (!is_commit_hash(m.commit) || !is_safe_etag(m.etag) || m.size < 0 || m.location.empty())
      throw HubError(HubErrorKind::BadResponse,
                     "the Hub's reply for " + path + " in " + repo_id + " lacks a usable X-Repo-Commit, ETag or size");
    return m;
  }
  throw HubError(HubErrorKind::BadResponse, "too many redirects for " + path + " in " + repo_id);
}

}  // namespace inferdesk::hub
