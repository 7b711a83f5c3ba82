#include "core/hub/http.h"

#include "core/util/curl_easy.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <memory>
#include <mutex>

#include "core/hub/hub_error.h"

namespace inferdesk::hub {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// curl_global_init is not thread-safe on every libcurl; once per process before the first handle.
void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Transfer {
  HttpResponse response;
  const HttpRequest* request = nullptr;
  BodySink* sink = nullptr;  // null: collect the body
  bool headers_delivered = false;
  bool too_large = false;
  std::exception_ptr error;
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * count);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.rfind("HTTP/", 0) == 0) {  // a new response (after a redirect or a 100): start over
    t->response.headers.clear();
    const size_t sp = line.find(' ');
    t->response.status = sp == std::string_view::npos ? 0 : std::atol(std::string(line.substr(sp + 1, 3)).c_str());
    return size * count;
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return size * count;
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  t->response.headers.add(std::string(line.substr(0, colon)), std::string(value));
  return size * count;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  try {
    if (!t->sink) {
      if (static_cast<int64_t>(t->response.body.size() + n) > t->request->max_body) {
        t->too_large = true;
        return 0;
      }
      t->response.body.append(data, n);
      return n;
    }
    if (!t->headers_delivered) {
      t->headers_delivered = true;
      if (t->sink->on_headers && !t->sink->on_headers(t->response.status, t->response.headers)) {
        t->response.aborted = true;
        return 0;
      }
    }
    if ((t->sink->keep_going && !t->sink->keep_going()) || (t->sink->on_data && !t->sink->on_data(data, n))) {
      t->response.aborted = true;
      return 0;
    }
    return n;
  } catch (...) {
    t->error = std::current_exception();
    return 0;
  }
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  if (!t->sink || !t->sink->keep_going) return 0;
  try {
    if (t->sink->keep_going()) return 0;
  } catch (...) {
    t->error = std::current_exception();
  }
  t->response.aborted = true;
  return 1;
}

HubError network_error(CURLcode code, const char* detail, const std::string& url) {
  const std::string host = url_authority(url);
  const std::string reason = detail && *detail ? detail : curl_easy_strerror(code);
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return HubError(HubErrorKind::Network, "cannot resolve " + host + " (no network, or a proxy needed?): " + reason);
    case CURLE_COULDNT_CONNECT: return HubError(HubErrorKind::Network, "cannot connect to " + host + ": " + reason);
    case CURLE_OPERATION_TIMEDOUT:
      return HubError(HubErrorKind::Timeout, "timed out talking to " + host + ": " + reason);
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return HubError(HubErrorKind::ConnectionDropped, "the connection to " + host + " dropped: " + reason);
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
      return HubError(HubErrorKind::Network, "TLS with " + host + " failed: " + reason);
    default: return HubError(HubErrorKind::Network, "request to " + host + " failed: " + reason);
  }
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

HttpResponse perform(const HttpOptions& o, const HttpRequest& r, BodySink* sink) {
  init_curl_once();
  std::unique_ptr<CURL, CurlDeleter> easy(curl_easy_init());
  if (!easy) throw HubError(HubErrorKind::Network, "libcurl could not start a request");
  CURL* c = easy.get();
  Transfer t;
  t.request = &r;
  t.sink = sink;
  std::unique_ptr<curl_slist, SlistDeleter> headers;
  for (const auto& h : r.headers) headers.reset(curl_slist_append(headers.release(), h.c_str()));
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy::set_request(c, r.url.c_str(), headers.get(), o.user_agent.c_str());
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  if (r.method == "HEAD") curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, r.follow_redirects ? 1L : 0L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(o.connect_timeout.count()));
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, o.low_speed_bytes);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(o.low_speed_time.count()));
  if (!sink) curl_easy_setopt(c, CURLOPT_TIMEOUT, static_cast<long>(o.api_timeout.count()));
  curl_easy::set_callbacks(c, &t, on_body, on_header, on_progress);
  const CURLcode rc = curl_easy_perform(c);
  if (t.error) std::rethrow_exception(t.error);
  char* effective = nullptr;
  if (curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &effective) == CURLE_OK && effective)
    t.response.effective_url = effective;
  if (t.too_large)
    throw HubError(HubErrorKind::BadResponse, "the reply from " + url_authority(r.url) + " is larger than " +
                                                  std::to_string(r.max_body) + " bytes");
  if (t.response.aborted) return std::move(t.response);
  if (rc != CURLE_OK) throw network_error(rc, errbuf, r.url);
  // An empty body on a stream still delivers its headers (a zero-byte file, an error reply).
  if (sink && !t.headers_delivered && sink->on_headers) {
    t.headers_delivered = true;
    if (!sink->on_headers(t.response.status, t.response.headers)) t.response.aborted = true;
  }
  return std::move(t.response);
}

}  // namespace

void HttpHeaders::add(std::string name, std::string value) { entries_.emplace_back(std::move(name), std::move(value)); }

std::optional<std::string> HttpHeaders::get(std::string_view name) const {
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it)
    if (iequals(it->first, name)) return it->second;
  return std::nullopt;
}

HttpResponse http_fetch(const HttpOptions& options, const HttpRequest& request) {
  return perform(options, request, nullptr);
}

HttpResponse http_stream(const HttpOptions& options, const HttpRequest& request, BodySink& sink) {
  return perform(options, request, &sink);
}

std::string url_encode(std::string_view text, bool keep_slash) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char ch : text) {
    if (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~' || (keep_slash && ch == '/')) {
      out += static_cast<char>(ch);
    } else {
      out += '%';
      out += hex[ch >> 4];
      out += hex[ch & 15];
    }
  }
  return out;
}

std::string url_authority(std::string_view url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return "";
  std::string_view rest = url.substr(scheme + 3);
  return std::string(rest.substr(0, rest.find_first_of("/?#")));
}

}  // namespace inferdesk::hub
