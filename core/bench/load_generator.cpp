#include "core/bench/load_generator.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace inferdesk::bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// One request in flight: its handle, the SSE line buffer and the timings.
struct Transfer {
  const BenchRequest* request = nullptr;
  RequestResult* result = nullptr;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  Clock::time_point run_start, sent, last_chunk;
  std::string pending;  // SSE bytes not yet split into lines, or the whole JSON body
  bool stream = false;
  bool saw_done = false;
  bool aborting = false;
  bool cancelling = false;
  ~Transfer() {
    if (headers) curl_slist_free_all(headers);
    if (easy) curl_easy_cleanup(easy);
  }
};

std::string choice_text(const nlohmann::json& choice, bool* has_tokens) {
  std::string text;
  if (auto t = choice.find("text"); t != choice.end() && t->is_string()) text = t->get<std::string>();
  if (auto d = choice.find("delta"); d != choice.end() && d->is_object())
    if (auto c = d->find("content"); c != d->end() && c->is_string()) text = c->get<std::string>();
  if (auto m = choice.find("message"); m != choice.end() && m->is_object())
    if (auto c = m->find("content"); c != m->end() && c->is_string()) text = c->get<std::string>();
  auto ids = choice.find("token_ids");
  *has_tokens = !text.empty() || (ids != choice.end() && ids->is_array() && !ids->empty());
  return text;
}

void read_usage(const nlohmann::json& j, RequestResult& r) {
  auto u = j.find("usage");
  if (u == j.end() || !u->is_object()) return;
  if (auto p = u->find("prompt_tokens"); p != u->end() && p->is_number()) r.prompt_tokens = p->get<int64_t>();
  if (auto c = u->find("completion_tokens"); c != u->end() && c->is_number()) r.output_tokens = c->get<int64_t>();
}

// One parsed JSON object (an SSE event's data or the whole body).
void on_json(Transfer& t, const nlohmann::json& j, Clock::time_point now) {
  RequestResult& r = *t.result;
  if (auto e = j.find("error"); e != j.end()) {
    r.error = e->is_object() && e->contains("message") ? (*e)["message"].dump() : e->dump();
    return;
  }
  read_usage(j, r);
  auto choices = j.find("choices");
  if (choices == j.end() || !choices->is_array()) return;
  for (const auto& c : *choices) {
    if (!c.is_object() || c.value("index", 0) != 0) continue;
    bool content = false;
    r.text += choice_text(c, &content);
    if (auto f = c.find("finish_reason"); f != c.end() && f->is_string()) r.finish_reason = f->get<std::string>();
    if (!content) continue;
    if (r.chunks == 0)
      r.ttft_s = seconds_between(t.sent, now);
    else
      r.itl_s.push_back(seconds_between(t.last_chunk, now));
    t.last_chunk = now;
    r.chunk_s.push_back(seconds_between(t.run_start, now));
    ++r.chunks;
  }
}

void on_sse_line(Transfer& t, std::string_view line, Clock::time_point now) {
  if (line.substr(0, 5) != "data:") return;
  line.remove_prefix(5);
  while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
  if (line == "[DONE]") {
    t.saw_done = true;
    return;
  }
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_discarded()) on_json(t, j, now);
}

size_t on_body(char* data, size_t size, size_t nmemb, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  const size_t n = size * nmemb;
  const auto now = Clock::now();
  t.pending.append(data, n);
  if (!t.stream) return n;
  size_t start = 0;
  for (size_t nl; (nl = t.pending.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string_view line(t.pending.data() + start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    on_sse_line(t, line, now);
  }
  t.pending.erase(0, start);
  const int32_t limit = t.request->abort_after_chunks;
  if (limit >= 0 && t.result->chunks >= limit && !t.saw_done) {
    t.aborting = true;
    return 0;  // libcurl hangs up (CURLE_WRITE_ERROR)
  }
  return n;
}

size_t on_header(char* data, size_t size, size_t nmemb, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  std::string_view h(data, size * nmemb);
  auto lower = std::string(h.substr(0, std::min<size_t>(h.size(), 32)));
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower.rfind("content-type:", 0) == 0) t.stream = h.find("text/event-stream") != std::string_view::npos;
  if (lower.rfind("retry-after:", 0) == 0) {
    std::string v(h.substr(12));
    v.erase(0, v.find_first_not_of(" \t"));
    v.erase(v.find_last_not_of(" \t\r\n") + 1);
    t.result->retry_after = v;
  }
  return size * nmemb;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto& t = *static_cast<Transfer*>(user);
  const double limit = t.request->abort_after_s;
  if (limit >= 0 && seconds_between(t.sent, Clock::now()) >= limit) {
    t.aborting = true;
    return 1;
  }
  return 0;
}

std::unique_ptr<Transfer> make_transfer(const LoadOptions& o, const BenchRequest& req, RequestResult& res,
                                        Clock::time_point run_start) {
  auto t = std::make_unique<Transfer>();
  t->request = &req;
  t->result = &res;
  t->run_start = run_start;
  t->easy = curl_easy_init();
  if (!t->easy) throw std::runtime_error("curl_easy_init failed");
  t->headers = curl_slist_append(t->headers, "Content-Type: application/json");
  t->headers = curl_slist_append(t->headers, "Expect:");
  if (!o.api_key.empty()) t->headers = curl_slist_append(t->headers, ("Authorization: Bearer " + o.api_key).c_str());
  CURL* e = t->easy;
  curl_easy_setopt(e, CURLOPT_URL, (o.base_url + (req.endpoint.empty() ? o.endpoint : req.endpoint)).c_str());
  if (req.fresh_connection) {
    curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
    curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
  }
  curl_easy_setopt(e, CURLOPT_POST, 1L);
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, req.body.c_str());
  curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, t.get());
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, t.get());
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(o.timeout_s * 1000));
  curl_easy_setopt(e, CURLOPT_PRIVATE, t.get());
  if (req.abort_after_s >= 0) {
    curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(e, CURLOPT_XFERINFODATA, t.get());
    curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
  }
  return t;
}

void finish_transfer(Transfer& t, CURLcode code) {
  RequestResult& r = *t.result;
  const auto now = Clock::now();
  r.latency_s = seconds_between(t.sent, now);
  long status = 0;
  curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &status);
  r.http_status = static_cast<int>(status);
  if (!t.stream && !t.pending.empty()) {
    const nlohmann::json j = nlohmann::json::parse(t.pending, nullptr, false);
    if (!j.is_discarded()) on_json(t, j, now);
    if (r.chunks > 0) {  // a whole response: its first token came with it
      r.ttft_s = r.latency_s;
      r.chunk_s.assign(1, seconds_between(t.run_start, now));
    }
  }
  if (t.cancelling) {
    r.cancelled = true;
    r.error = "cancelled";
  } else if (t.aborting) {
    r.aborted = true;
    r.error = "the client hung up on purpose";
  } else if (code != CURLE_OK) {
    r.error = curl_easy_strerror(code);
  } else if (status != 200 && r.error.empty()) {
    r.error = "HTTP " + std::to_string(status);
  } else if (t.stream && !t.saw_done && r.error.empty()) {
    r.error = "the stream ended without [DONE]";
  }
  r.success = r.error.empty() && status == 200;
}

}  // namespace

std::vector<double> arrival_times(size_t n, double rate, double burstiness, uint64_t seed) {
  std::vector<double> t(n, 0.0);
  if (!(rate > 0) || std::isinf(rate) || n == 0) return t;
  std::mt19937_64 rng(seed);
  // Mean gap 1 / rate whatever the shape: scale = 1 / (rate * burstiness), as vLLM's bench.
  std::gamma_distribution<double> gap(burstiness, 1.0 / (rate * burstiness));
  double at = 0;
  for (size_t i = 0; i < n; ++i) {
    t[i] = at;
    at += gap(rng);
  }
  return t;
}

LoadResult run_load(const LoadOptions& o, const std::vector<BenchRequest>& requests) {
  static const CURLcode global = curl_global_init(CURL_GLOBAL_DEFAULT);  // once per process
  if (global != CURLE_OK) throw std::runtime_error("curl_global_init failed");
  LoadResult out;
  out.requests.resize(requests.size());
  CURLM* multi = curl_multi_init();
  if (!multi) throw std::runtime_error("curl_multi_init failed");
  curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, static_cast<long>(std::max<size_t>(requests.size(), 16)));
  const std::vector<double> at = arrival_times(requests.size(), o.request_rate, o.burstiness, o.seed);
  std::vector<std::unique_ptr<Transfer>> live(requests.size());
  const auto start = Clock::now();
  size_t next = 0, done = 0;
  int32_t active = 0;
  auto cancelled = [&o] { return o.cancel && o.cancel->load(std::memory_order_relaxed); };
  while (done < requests.size()) {
    if (cancelled()) {
      for (; next < requests.size(); ++next, ++done) {  // never sent
        RequestResult& r = out.requests[next];
        r.cancelled = true;
        r.error = "cancelled";
        if (o.on_request_done) o.on_request_done(next, r);
      }
      for (auto& t : live)
        if (t && !t->cancelling) {
          t->cancelling = true;
          curl_multi_remove_handle(multi, t->easy);
          finish_transfer(*t, CURLE_ABORTED_BY_CALLBACK);
          const size_t i = static_cast<size_t>(t->result - out.requests.data());
          if (o.on_request_done) o.on_request_done(i, *t->result);
          t.reset();
          --active;
          ++done;
        }
      break;
    }
    const double now_s = seconds_between(start, Clock::now());
    while (next < requests.size() && at[next] <= now_s && (o.max_concurrency <= 0 || active < o.max_concurrency)) {
      live[next] = make_transfer(o, requests[next], out.requests[next], start);
      live[next]->sent = Clock::now();
      out.requests[next].start_s = seconds_between(start, live[next]->sent);
      curl_multi_add_handle(multi, live[next]->easy);
      ++next;
      out.max_concurrent = std::max(out.max_concurrent, ++active);
    }
    int running = 0;
    curl_multi_perform(multi, &running);
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
      finish_transfer(*t, msg->data.result);
      curl_multi_remove_handle(multi, msg->easy_handle);
      const size_t i = static_cast<size_t>(t->result - out.requests.data());
      if (o.on_request_done) o.on_request_done(i, *t->result);
      live[i].reset();
      --active;
      ++done;
    }
    int wait_ms = 50;
    if (next < requests.size() && (o.max_concurrency <= 0 || active < o.max_concurrency))
      wait_ms = std::clamp(static_cast<int>((at[next] - seconds_between(start, Clock::now())) * 1000), 0, 50);
    if (done < requests.size()) curl_multi_poll(multi, nullptr, 0, wait_ms, nullptr);
  }
  out.duration_s = seconds_between(start, Clock::now());
  curl_multi_cleanup(multi);
  return out;
}

}  // namespace inferdesk::bench
