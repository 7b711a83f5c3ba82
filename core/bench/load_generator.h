// Load generator for OpenAI-compatible servers (ours, vLLM, TGI, ...): sends a list of request
// bodies to one endpoint with vLLM `bench serve`'s arrival process (all at once, or gamma
// inter-arrival times at --request-rate with --burstiness, 1 = Poisson) and concurrency cap, reads
// streamed SSE or whole JSON responses, and times each request: time to first token (first chunk
// carrying text or token ids), the gaps between such chunks, end-to-end latency. Usage counts come
// from the server's usage object. libcurl multi on one thread: thousands of concurrent streams.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace inferdesk::bench {

struct RequestResult;

struct BenchRequest {
  std::string body;               // the JSON body, sent as is
  std::string endpoint;           // "" : LoadOptions::endpoint
  bool fresh_connection = false;  // a new connection, closed afterwards (default: reuse)
  int64_t prompt_tokens = 0;      // known prompt length (totals when the server reports none)
  // Fault injection: the client hangs up after this many content chunks (>= 0) or seconds.
  int32_t abort_after_chunks = -1;
  double abort_after_s = -1;
  // Multi-turn chats: sent only once request `after` (an index in the same list) has ended, with
  // the body make_body builds then from the results so far (the replies the next turn carries).
  int64_t after = -1;
  std::function<std::string(const std::vector<RequestResult>& results)> make_body;
};

struct LoadOptions {
  std::string base_url = "http://127.0.0.1:8000";
  std::string endpoint = "/v1/completions";                       // or /v1/chat/completions
  std::string api_key;                                            // sent as "Authorization: Bearer ..." when set
  double request_rate = std::numeric_limits<double>::infinity();  // requests/s
  double burstiness = 1.0;                                        // gamma shape of the inter-arrival times
  int32_t max_concurrency = 0;                                    // 0: no cap
  uint64_t seed = 0;                                              // arrival times
  double timeout_s = 600;                                         // per request
  // Called on run_load's thread as each request ends (its index in the list and its result), so
  // a caller can show progress and live plots while the run goes on.
  std::function<void(size_t, const RequestResult&)> on_request_done;
  // Set from any thread to stop the run: requests not yet sent end as failed ("cancelled"), those
  // in flight are hung up. Null: never cancelled.
  const std::atomic<bool>* cancel = nullptr;
};

struct RequestResult {
  bool success = false;
  bool aborted = false;    // hung up on purpose (BenchRequest::abort_after_*)
  bool cancelled = false;  // LoadOptions::cancel stopped it (sent or not)
  int http_status = 0;
  std::string error;
  double start_s = 0;                            // sent, since the run started
  double ttft_s = 0;                             // first content chunk (non-streamed: the whole response)
  double latency_s = 0;                          // last byte
  std::vector<double> itl_s;                     // gaps between content chunks
  std::vector<double> chunk_s;                   // each content chunk's arrival, since the run started
  int64_t prompt_tokens = 0, output_tokens = 0;  // the server's usage (0 when not given)
  int32_t chunks = 0;                            // content chunks received
  std::string text;                              // choice 0's text (streamed deltas joined, or the whole text)
  std::string finish_reason;
  std::string retry_after;  // the Retry-After header of a 429
};

struct LoadResult {
  std::vector<RequestResult> requests;  // in the order given
  double duration_s = 0;                // first send to last response
  int32_t max_concurrent = 0;
  // The run's time zero on the steady clock: lets a test in the same process compare the client's
  // times with a server's own timestamps.
  std::chrono::steady_clock::time_point started{};
};

// Throws std::runtime_error when libcurl cannot be set up. Failed requests are results, not
// exceptions.
LoadResult run_load(const LoadOptions& options, const std::vector<BenchRequest>& requests);

// Request send times (seconds from the start) for n requests: vLLM's gamma arrivals (burstiness
// infinite: evenly spaced, guidellm's "constant" strategy).
std::vector<double> arrival_times(size_t n, double rate, double burstiness, uint64_t seed);

}  // namespace inferdesk::bench
