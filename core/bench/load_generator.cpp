#include "core/bench/load_generator.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <list>
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
  std::string body;     // a body built at send time (BenchRequest::make_body)
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
  if (std::isinf(burstiness)) {  // the gamma's limit: every gap is 1 / rate
    for (size_t i = 0; i < n; ++i) t[i] = static_cast<double>(i) / rate;
    return t;
  }
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

namespace {

// The state of one run_load call: which requests are sent, in flight, waiting for a previous turn.
class Run {
 public:
  Run(const LoadOptions& o, const std::vector<BenchRequest>& requests) : o_(o), requests_(requests) {
    out_.requests.resize(requests.size());
    ended_.assign(requests.size(), false);
    live_.resize(requests.size());
    // Follow-up turns leave when their previous turn ends: only first turns take arrival times.
    size_t independent = 0;
    for (const auto& r : requests) independent += r.after < 0 ? 1 : 0;
    const std::vector<double> at = arrival_times(independent, o.request_rate, o.burstiness, o.seed);
    at_.assign(requests.size(), 0.0);
    for (size_t i = 0, k = 0; i < requests.size(); ++i)
      if (requests[i].after < 0) at_[i] = at[k++];
    multi_ = curl_multi_init();
    if (!multi_) throw std::runtime_error("curl_multi_init failed");
    curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, static_cast<long>(std::max<size_t>(requests.size(), 16)));
  }
  ~Run() { curl_multi_cleanup(multi_); }

  LoadResult go() {
    start_ = Clock::now();
    out_.started = start_;
    while (done_ < requests_.size()) {
      if (o_.cancel && o_.cancel->load(std::memory_order_relaxed)) {
        cancel_all();
        break;
      }
      send_due();
      int running = 0;
      curl_multi_perform(multi_, &running);
      collect();
      if (done_ < requests_.size()) curl_multi_poll(multi_, nullptr, 0, wait_ms(), nullptr);
    }
    out_.duration_s = seconds_between(start_, Clock::now());
    return std::move(out_);
  }

 private:
  bool room() const { return o_.max_concurrency <= 0 || active_ < o_.max_concurrency; }
  bool ready(size_t i) const {
    const int64_t a = requests_[i].after;
    return a < 0 || (static_cast<size_t>(a) < ended_.size() && ended_[static_cast<size_t>(a)]);
  }

  void send(size_t i) {
    const BenchRequest& req = requests_[i];
    auto t = make_transfer(o_, req, out_.requests[i], start_);
    if (req.make_body) {  // built now, from the replies so far; the transfer owns the bytes
      t->body = req.make_body(out_.requests);
      curl_easy_setopt(t->easy, CURLOPT_POSTFIELDS, t->body.c_str());
      curl_easy_setopt(t->easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t->body.size()));
    }
    t->sent = Clock::now();
    out_.requests[i].start_s = seconds_between(start_, t->sent);
    curl_multi_add_handle(multi_, t->easy);
    live_[i] = std::move(t);
    out_.max_concurrent = std::max(out_.max_concurrent, ++active_);
  }

  // Sends the waiting follow-ups whose turn came, then new requests whose arrival time passed.
  void send_due() {
    for (auto it = blocked_.begin(); it != blocked_.end() && room();)
      if (ready(*it)) {
        send(*it);
        it = blocked_.erase(it);
      } else {
        ++it;
      }
    const double now_s = seconds_between(start_, Clock::now());
    while (next_ < requests_.size() && at_[next_] <= now_s && room()) {
      if (ready(next_))
        send(next_);
      else
        blocked_.push_back(next_);
      ++next_;
    }
  }

  void ended(size_t i) {
    ended_[i] = true;
    if (o_.on_request_done) o_.on_request_done(i, out_.requests[i]);
    ++done_;
  }

  void collect() {
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi_, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
      finish_transfer(*t, msg->data.result);
      curl_multi_remove_handle(multi_, msg->easy_handle);
      const size_t i = static_cast<size_t>(t->result - out_.requests.data());
      live_[i].reset();
      --active_;
      ended(i);
    }
  }

  // Requests never sent end as cancelled; those in flight are hung up.
  void cancel_all() {
    auto unsent = [&](size_t i) {
      out_.requests[i].cancelled = true;
      out_.requests[i].error = "cancelled";
      ended(i);
    };
    for (size_t i : blocked_) unsent(i);
    blocked_.clear();
    for (; next_ < requests_.size(); ++next_) unsent(next_);
    for (size_t i = 0; i < live_.size(); ++i) {
      if (!live_[i]) continue;
      live_[i]->cancelling = true;
      curl_multi_remove_handle(multi_, live_[i]->easy);
      finish_transfer(*live_[i], CURLE_ABORTED_BY_CALLBACK);
      live_[i].reset();
      --active_;
      ended(i);
    }
  }

  int wait_ms() const {
    if (next_ < requests_.size() && room())
      return std::clamp(static_cast<int>((at_[next_] - seconds_between(start_, Clock::now())) * 1000), 0, 50);
    return 50;
  }

  const LoadOptions& o_;
  const std::vector<BenchRequest>& requests_;
  LoadResult out_;
  CURLM* multi_ = nullptr;
  std::vector<double> at_;
  std::vector<bool> ended_;
  std::vector<std::unique_ptr<Transfer>> live_;
  std::list<size_t> blocked_;  // follow-up turns whose previous turn is still running
  Clock::time_point start_;
  size_t next_ = 0, done_ = 0;
  int32_t active_ = 0;
};

}  // namespace

LoadResult run_load(const LoadOptions& o, const std::vector<BenchRequest>& requests) {
  static const CURLcode global = curl_global_init(CURL_GLOBAL_DEFAULT);  // once per process
  if (global != CURLE_OK) throw std::runtime_error("curl_global_init failed");
  Run run(o, requests);
  return run.go();
}

}  // namespace inferdesk::bench
