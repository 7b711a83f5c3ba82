#include "tests/server/support/http_client.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace inferdesk::test {

namespace {

size_t append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

Json HttpResponse::json() const { return Json::parse(body, nullptr, false); }

std::string HttpResponse::header(const std::string& name) const {
  const std::string h = lower(headers), key = lower(name) + ":";
  size_t at = h.rfind("\n" + key);
  if (at == std::string::npos) return "";
  at += key.size() + 1;
  const size_t end = headers.find('\r', at);
  std::string v = headers.substr(at, end - at);
  v.erase(0, v.find_first_not_of(' '));
  return v;
}

HttpClient::HttpClient(std::string base_url) : base_(std::move(base_url)) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  curl_ = curl_easy_init();
  if (!curl_) throw std::runtime_error("curl_easy_init failed");
}

HttpClient::~HttpClient() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

HttpResponse HttpClient::perform(const std::string& path, const std::string* body,
                                 const std::vector<std::string>& headers) {
  CURL* c = static_cast<CURL*>(curl_);
  HttpResponse r;
  curl_slist* list = nullptr;
  list = curl_slist_append(list, "Expect:");
  if (body) list = curl_slist_append(list, "Content-Type: application/json");
  for (const auto& h : headers) list = curl_slist_append(list, h.c_str());
  const std::string url = base_ + path;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, append);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &r.headers);
  if (body) {
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body->c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
  } else {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  }
  const CURLcode code = curl_easy_perform(c);
  if (code != CURLE_OK) r.error = curl_easy_strerror(code);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &connects_);
  curl_slist_free_all(list);
  return r;
}

HttpResponse HttpClient::get(const std::string& path, const std::vector<std::string>& headers) {
  return perform(path, nullptr, headers);
}

HttpResponse HttpClient::post(const std::string& path, const std::string& body,
                              const std::vector<std::string>& headers) {
  return perform(path, &body, headers);
}

std::vector<std::string> sse_data(const std::string& raw) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < raw.size()) {
    size_t nl = raw.find('\n', start);
    if (nl == std::string::npos) nl = raw.size();
    std::string line = raw.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("data: ", 0) == 0) out.push_back(line.substr(6));
    start = nl + 1;
  }
  return out;
}

HttpClient::Stream HttpClient::stream(const std::string& path, const Json& body) {
  const HttpResponse r = post(path, body.dump());
  Stream s;
  s.status = r.status;
  s.raw = r.body;
  s.error = r.error;
  for (const std::string& d : sse_data(r.body)) {
    if (d == "[DONE]") {
      s.done = true;
      continue;
    }
    s.done = false;  // [DONE] must be the last event
    s.events.push_back(Json::parse(d, nullptr, false));
  }
  return s;
}

RawConnection::RawConnection(int port) {
  fd_ = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd_ >= 0 && connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) close();
}

RawConnection::~RawConnection() { close(); }

void RawConnection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool RawConnection::send(const std::string& bytes) {
  size_t off = 0;
  while (fd_ >= 0 && off < bytes.size()) {
    const ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return fd_ >= 0;
}

std::string RawConnection::read_until(const std::string& needle, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (fd_ >= 0 && (needle.empty() || got_.find(needle) == std::string::npos)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                            std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[65536];
    const ssize_t n = recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      close();
      break;
    }
    got_.append(buf, static_cast<size_t>(n));
  }
  return got_;
}

std::string RawConnection::read_all(std::chrono::milliseconds timeout) { return read_until("", timeout); }

bool RawConnection::closed_by_peer(std::chrono::milliseconds timeout) {
  read_all(timeout);
  return fd_ < 0;
}

}  // namespace inferdesk::test
