#include "core/remote/http_client.h"

#include "core/util/curl_easy.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <memory>

#include "core/remote/endpoint.h"

namespace inferdesk::remote {
namespace {

struct Transfer {
  const HttpCall* call;
  HttpResult* result;
  bool hung_up = false;
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t bytes = size * n;
  if (t->call->on_data) {
    if (!t->call->on_data(data, bytes)) {
      t->hung_up = true;
      return 0;  // libcurl aborts the transfer
    }
    return bytes;
  }
  std::string& body = t->result->body;
  body.append(data, std::min(bytes, t->call->max_body - std::min(body.size(), t->call->max_body)));
  return bytes;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) t->result->headers.clear();  // a new response (after 100-continue)
  const auto colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    std::string value = line.substr(colon + 1);
    const auto b = value.find_first_not_of(" \t");
    const auto e = value.find_last_not_of(" \t\r\n");
    t->result->headers[name] = b == std::string::npos ? "" : value.substr(b, e - b + 1);
  }
  return size * n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  return t->call->cancel && t->call->cancel->load() ? 1 : 0;
}

std::string host_of(const std::string& url) {
  const auto start = url.find("://");
  const auto from = start == std::string::npos ? 0 : start + 3;
  return url.substr(from, url.find('/', from) - from);
}

}  // namespace

HttpResult http_call(const HttpCall& call) {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) throw RemoteError(RemoteErrorCode::Unreachable, "libcurl could not be set up");
  HttpResult result;
  Transfer t{&call, &result};
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Accept: application/json, text/event-stream");
  if (call.method == "POST") headers = curl_slist_append(headers, "Content-Type: application/json");
  if (!call.bearer.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + call.bearer).c_str());
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_guard(headers, curl_slist_free_all);
  CURL* h = curl.get();
  curl_easy::set_request(h, call.url.c_str(), headers, "inferdesk");
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(call.connect_timeout_s * 1000));
  if (call.timeout_s > 0) curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(call.timeout_s * 1000));
  if (call.method == "POST") {
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, call.body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(call.body.size()));
  }
  curl_easy::set_callbacks(h, &t, on_body, on_header, on_progress);
  const CURLcode rc = curl_easy_perform(h);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &result.status);
  if (rc == CURLE_ABORTED_BY_CALLBACK || (call.cancel && call.cancel->load()))
    throw RemoteError(RemoteErrorCode::Cancelled, "cancelled");
  if (rc == CURLE_WRITE_ERROR && t.hung_up) return result;  // the caller hung up on purpose
  if (rc != CURLE_OK)
    throw RemoteError(RemoteErrorCode::Unreachable,
                      "could not reach " + host_of(call.url) + ": " + curl_easy_strerror(rc));
  return result;
}

}  // namespace inferdesk::remote
