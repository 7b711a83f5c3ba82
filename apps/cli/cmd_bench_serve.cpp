// inferdesk-cli bench-serve: load on an OpenAI-compatible server (ours or any other) with vLLM
// `bench serve`'s random token-id workload, arrival process and metrics (core/bench). Prints
// vLLM's table, or one JSON object with vLLM's keys (--json). Never a timed test: run it and
// record the figures in docs/PERF.md.
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <thread>

#include <curl/curl.h>

#include "apps/cli/cli_common.h"
#include "apps/cli/commands.h"
#include "core/bench/bench_metrics.h"
#include "core/bench/workload.h"
#include "core/util/error.h"

namespace inferdesk::cli {

namespace {

struct BenchServeArgs {
  bench::LoadOptions load;
  bench::RandomWorkload work;
  std::string percentiles = "99";
  std::string result_file;
  double wait_ready_s = 0;
  bool json = false, no_stream = false;
};

// GET base/health until it answers 200 or `seconds` pass (a server that is still loading).
bool wait_ready(const std::string& base, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  CURL* c = curl_easy_init();
  if (!c) return false;
  const std::string url = base + "/health";
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(
      c, CURLOPT_WRITEFUNCTION, +[](char*, size_t size, size_t n, void*) { return size * n; });
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 2000L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  bool ok = false;
  while (!ok && std::chrono::steady_clock::now() < deadline) {
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    ok = status == 200;
    if (!ok) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  curl_easy_cleanup(c);
  return ok;
}

std::vector<double> parse_percents(const std::string& text) {
  std::vector<double> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    size_t used = 0;
    double v = -1;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v < 0 || v > 100)
      throw Error(ErrorCode::InvalidArgument, "--percentiles: '" + item + "' is not a percent in [0, 100]");
    out.push_back(v);
    start = comma + 1;
  }
  return out;
}

void run_bench_serve(BenchServeArgs a) {
  const std::vector<double> percents = parse_percents(a.percentiles);
  if (!(a.load.request_rate > 0) || !(a.load.burstiness > 0))
    throw Error(ErrorCode::InvalidArgument, "--request-rate and --burstiness must be > 0 (inf: all at once)");
  a.work.stream = !a.no_stream;
  std::vector<bench::BenchRequest> requests;
  try {
    requests = bench::random_completions(a.work);
  } catch (const std::invalid_argument& e) {
    throw Error(ErrorCode::InvalidArgument, e.what());
  }
  if (a.wait_ready_s > 0 && !wait_ready(a.load.base_url, a.wait_ready_s))
    throw Error(ErrorCode::Io,
                a.load.base_url + "/health did not answer 200 within " + std::to_string(a.wait_ready_s) + " s");
  const bench::LoadResult run = bench::run_load(a.load, requests);
  const bench::BenchSummary s = bench::summarize(run, requests, percents);
  nlohmann::ordered_json j = bench::to_json(s);
  j["url"] = a.load.base_url + a.load.endpoint;
  j["num_prompts"] = a.work.num_requests;
  j["input_len"] = a.work.input_len;
  j["output_len"] = a.work.output_len;
  j["request_rate"] = std::isinf(a.load.request_rate) ? nlohmann::ordered_json("inf")
                                                      : nlohmann::ordered_json(a.load.request_rate);
  j["burstiness"] = a.load.burstiness;
  j["max_concurrency"] = a.load.max_concurrency;
  if (!a.result_file.empty()) {
    std::ofstream f(a.result_file);
    if (!f) throw Error(ErrorCode::Io, "cannot write " + a.result_file);
    f << j.dump(2) << "\n";
  }
  if (a.json)
    std::cout << j.dump() << std::endl;
  else
    std::cout << bench::to_text(s);
  if (s.failed > 0) exit_status() = 1;
}

}  // namespace

void register_bench_serve(CLI::App& app) {
  auto a = std::make_shared<BenchServeArgs>();
  a->load.request_rate = std::numeric_limits<double>::infinity();
  CLI::App* c = app.add_subcommand("bench-serve", "Load an OpenAI-compatible server (vLLM bench serve metrics)");
  c->add_option("--url", a->load.base_url, "Server base URL")->default_val("http://127.0.0.1:8000");
  c->add_option("--endpoint", a->load.endpoint, "Completions endpoint")->default_val("/v1/completions");
  c->add_option("--model", a->work.model, "The request's model field (default: left out)");
  c->add_option("--api-key", a->load.api_key, "Bearer token");
  c->add_option("--num-requests,--num-prompts", a->work.num_requests, "Requests to send")->default_val(100);
  c->add_option("--input-len", a->work.input_len, "Prompt tokens per request")->default_val(128);
  c->add_option("--output-len", a->work.output_len, "Generated tokens per request")->default_val(128);
  c->add_option("--token-id-min", a->work.token_id_min, "Smallest random prompt token id")->default_val(10);
  c->add_option("--token-id-max", a->work.token_id_max, "Random prompt token ids are below this")->default_val(10000);
  c->add_option("--request-rate", a->load.request_rate, "Requests per second (inf: all at once)");
  c->add_option("--burstiness", a->load.burstiness, "Gamma shape of arrivals (1: Poisson)")->default_val(1.0);
  c->add_option("--max-concurrency", a->load.max_concurrency, "Requests in flight at most (0: no cap)");
  c->add_option("--seed", a->work.seed, "Prompts and arrivals");
  c->add_option("--percentiles", a->percentiles, "Comma-separated percentiles")->default_val("99");
  c->add_option("--timeout", a->load.timeout_s, "Seconds per request")->default_val(600);
  c->add_option("--wait-ready", a->wait_ready_s, "Wait up to this many seconds for /health first");
  c->add_option("--result-file", a->result_file, "Also write the JSON result here");
  c->add_flag("--no-stream", a->no_stream, "Whole responses instead of SSE streams");
  c->add_flag("--json", a->json, "One JSON object on stdout");
  c->callback([a] {
    a->load.seed = a->work.seed;
    run_bench_serve(*a);
  });
}

}  // namespace inferdesk::cli
