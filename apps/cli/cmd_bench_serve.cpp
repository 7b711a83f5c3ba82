// inferdesk-cli bench-serve: load on an OpenAI-compatible server (ours or any other), or on the
// engine in process (--in-process --model-dir), with vLLM `bench serve`'s workloads (random,
// ShareGPT, shared prefix, multi-turn), arrival process, sweeps and metrics (core/bench). Prints
// vLLM's table per point, or JSON with vLLM's keys (--json); --result-file / --save-result keep
// the result (one object per point, with raw timestamps). Never a timed test: run it and record
// the figures in docs/PERF.md.
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <thread>

#include <curl/curl.h>

#include "apps/cli/cli_common.h"
#include "apps/cli/commands.h"
#include "core/backend/backend.h"
#include "core/bench/bench_metrics.h"
#include "core/bench/benchmark.h"
#include "core/bench/engine_target.h"
#include "core/bench/result_io.h"
#include "core/bench/workload_multiturn.h"
#include "core/bench/workload_prefix.h"
#include "core/bench/workload_random.h"
#include "core/bench/workload_sharegpt.h"
#include "core/engine/engine.h"
#include "core/tokenizer/tokenizer.h"
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
  std::string dataset = "random", dataset_path, tokenizer_dir, sweep, goodput, model_dir;
  double range_ratio = 0;
  int32_t random_prefix_len = 0, num_prefixes = 10, prefix_len = 256, suffix_len = 256, turns = 3;
  std::optional<int32_t> sharegpt_output_len;
  int32_t warmup = 0;
  bool save_result = false, in_process = false, no_ignore_eos = false, prefer_ids = false;
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

// --endpoint: "chat", "completions" or a path (chat when it names chat/completions).
bench::Api resolve_endpoint(std::string& endpoint) {
  if (endpoint == "chat") endpoint = bench::endpoint_path(bench::Api::Chat);
  if (endpoint == "completions") endpoint = bench::endpoint_path(bench::Api::Completions);
  return endpoint.find("chat/completions") != std::string::npos ? bench::Api::Chat : bench::Api::Completions;
}

// `count` requests (conversations for multi-turn) of the random, prefix or multi-turn dataset.
std::vector<bench::BenchRequest> draw_requests(const BenchServeArgs& a, const Tokenizer* tok,
                                               const bench::BodyOptions& bo, uint64_t seed, int32_t count) {
  if (a.dataset == "random") {
    if (!tok && bo.api == bench::Api::Completions && a.range_ratio == 0 && a.random_prefix_len == 0) {
      bench::RandomWorkload w = a.work;  // the token-id form the server tests use, unchanged
      w.num_requests = count;
      w.seed = seed;
      w.stream = bo.stream;
      w.ignore_eos = bo.ignore_eos;
      try {
        return bench::random_completions(w);
      } catch (const std::invalid_argument& e) {
        throw Error(ErrorCode::InvalidArgument, e.what());
      }
    }
    bench::RandomDataset d{count, a.work.input_len,    a.work.output_len,  a.range_ratio, a.random_prefix_len,
                           seed,  a.work.token_id_min, a.work.token_id_max};
    return bench::make_requests(bench::sample_random(d, tok), bo);
  }
  if (a.dataset == "prefix") {
    // A warm-up shorter than the prefix count gets one request per prefix.
    const int32_t prefixes = count < a.work.num_requests ? std::min(a.num_prefixes, count) : a.num_prefixes;
    bench::PrefixDataset d{
        count, prefixes, a.prefix_len, a.suffix_len, a.work.output_len, seed, a.work.token_id_min, a.work.token_id_max};
    return bench::make_requests(bench::sample_prefix(d, tok), bo);
  }
  bench::MultiTurnDataset d{count, a.turns, a.work.input_len, a.work.output_len, seed};
  return bench::multiturn_requests(d, *tok, bo);
}

// Each point's prompts (and the warm-up's) drawn apart: see bench::RequestSource.
bench::RequestSource build_source(BenchServeArgs& a, const Tokenizer* tok, size_t points) {
  bench::BodyOptions bo;
  bo.api = resolve_endpoint(a.load.endpoint);
  bo.model = a.work.model;
  bo.stream = !a.no_stream;
  bo.ignore_eos = !a.no_ignore_eos;
  bo.prefer_ids = a.prefer_ids;
  auto need_tok = [&](const char* what) {
    if (!tok) throw Error(ErrorCode::InvalidArgument, std::string("--dataset ") + what + " needs --tokenizer DIR");
    return tok;
  };
  const int32_t n = a.work.num_requests, warmup = std::max(0, a.warmup);
  if (a.dataset == "sharegpt") {
    // One file for every point: enough conversations for all of them, each sent once.
    const int64_t want = warmup + static_cast<int64_t>(n) * static_cast<int64_t>(points);
    bench::ShareGptOptions o{static_cast<int32_t>(std::min<int64_t>(want, INT32_MAX)), a.sharegpt_output_len,
                             a.work.seed};
    auto pool = bench::make_requests(bench::load_sharegpt(a.dataset_path, *need_tok("sharegpt"), o), bo);
    return bench::pool_source(std::move(pool), n, warmup, a.work.seed);
  }
  if (a.dataset == "multiturn") {
    need_tok("multiturn");
    a.load.endpoint = bench::endpoint_path(bench::Api::Chat);
  } else if (a.dataset != "random" && a.dataset != "prefix") {
    throw Error(ErrorCode::InvalidArgument,
                "--dataset: '" + a.dataset + "' is not random, sharegpt, prefix or multiturn");
  }
  if (a.dataset == "prefix" && n < a.num_prefixes)
    throw Error(ErrorCode::InvalidArgument, "shared-prefix dataset: fewer requests than prefixes");
  draw_requests(a, tok, bo, a.work.seed, std::min(n, 1));  // bad options fail before any load
  return bench::seeded_source(a.work.seed, n, warmup, [a, tok, bo](uint64_t seed, int32_t count) {
    return draw_requests(a, tok, bo, seed, count);
  });
}

nlohmann::ordered_json point_json(const BenchServeArgs& a, const bench::PointResult& p, const Tokenizer* tok) {
  const std::vector<bench::BenchRequest>& requests = p.requests;
  bench::RunInfo info;
  info.date = bench::now_date();
  info.backend = a.in_process ? "inferdesk-in-process" : "openai";
  info.label = p.label;
  info.model_id = a.work.model;
  info.tokenizer_id = a.tokenizer_dir;
  info.base_url = a.in_process ? "" : a.load.base_url;
  info.endpoint = a.load.endpoint;
  info.num_prompts = static_cast<int64_t>(requests.size());
  info.request_rate = p.request_rate;
  info.burstiness = p.burstiness;
  info.max_concurrency = p.max_concurrency;
  info.prompt_seed = p.prompt_seed;
  info.prompt_note = p.prompt_note;
  nlohmann::ordered_json j = bench::result_json(info, p.run, requests, p.summary, bench::output_lengths(p.run, tok, nullptr));
  j["url"] = a.load.base_url + a.load.endpoint;  // kept from the first edition's JSON
  j["input_len"] = a.work.input_len;
  j["output_len"] = a.work.output_len;
  return j;
}

void run_bench_serve(BenchServeArgs a) {
  bench::BenchmarkSpec spec;
  spec.summary.percents = parse_percents(a.percentiles);
  spec.summary.slo = bench::parse_goodput(a.goodput);
  if (!a.sweep.empty()) spec.sweep = bench::parse_sweep(a.sweep);
  spec.warmup = a.warmup;
  if (!(a.load.request_rate > 0) || !(a.load.burstiness > 0))
    throw Error(ErrorCode::InvalidArgument, "--request-rate and --burstiness must be > 0 (inf: all at once)");
  std::optional<Tokenizer> tok;
  if (!a.tokenizer_dir.empty()) tok = Tokenizer::from_dir(a.tokenizer_dir);
  if (a.in_process && a.model_dir.empty()) throw Error(ErrorCode::InvalidArgument, "--in-process needs --model-dir");
  if (a.in_process && !tok) tok = Tokenizer::from_dir(a.model_dir);
  const Tokenizer* t = tok ? &*tok : nullptr;
  const bench::RequestSource source = build_source(a, t, bench::point_count(spec.sweep));
  spec.summary.tokenizer = t;
  spec.load = a.load;
  std::unique_ptr<Engine> engine;
  bench::Driver driver = bench::http_driver();
  if (a.in_process) {
    engine = std::make_unique<Engine>(load_model_folder(a.model_dir, make_cpu_backend()), EngineOptions{});
    driver = bench::engine_driver(*engine, t);
  } else if (a.wait_ready_s > 0 && !wait_ready(a.load.base_url, a.wait_ready_s)) {
    throw Error(ErrorCode::Io,
                a.load.base_url + "/health did not answer 200 within " + std::to_string(a.wait_ready_s) + " s");
  }
  const std::vector<bench::PointResult> points = bench::run_benchmark(driver, source, spec);
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (const auto& p : points) all.push_back(point_json(a, p, t));
  const nlohmann::ordered_json out = all.size() == 1 ? all[0] : all;
  if (a.save_result && a.result_file.empty()) a.result_file = "inferdesk-bench-" + bench::now_date() + ".json";
  if (!a.result_file.empty()) bench::write_json_file(a.result_file, out);
  if (a.json) {
    std::cout << out.dump() << std::endl;
  } else {
    for (const auto& p : points) std::cout << (points.size() > 1 ? "[" + p.label + "]\n" : "") << bench::to_text(p.summary);
  }
  for (const auto& p : points)
    if (!p.prompt_note.empty()) std::cerr << "bench-serve: " << p.label << ": " << p.prompt_note << "\n";
  for (const auto& p : points)
    if (p.summary.failed > 0) exit_status() = 1;
}

}  // namespace

void register_bench_serve(CLI::App& app) {
  auto a = std::make_shared<BenchServeArgs>();
  a->load.request_rate = std::numeric_limits<double>::infinity();
  CLI::App* c = app.add_subcommand("bench-serve", "Load an OpenAI-compatible server (vLLM bench serve metrics)");
  c->add_option("--url", a->load.base_url, "Server base URL")->default_val("http://127.0.0.1:8000");
  c->add_option("--endpoint", a->load.endpoint, "chat, completions, or a path")->default_val("/v1/completions");
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
  c->add_option("--seed", a->work.seed,
                "Prompts and arrivals. Each sweep point and the warm-up draw their own prompts from it; "
                "two runs with one seed send the same prompts (the same on every engine), so restart a "
                "server with prefix caching, or change the seed, between runs on one engine");
  c->add_option("--percentiles", a->percentiles, "Comma-separated percentiles")->default_val("99");
  c->add_option("--timeout", a->load.timeout_s, "Seconds per request")->default_val(600);
  c->add_option("--wait-ready", a->wait_ready_s, "Wait up to this many seconds for /health first");
  c->add_option("--result-file", a->result_file, "Also write the JSON result here");
  c->add_flag("--no-stream", a->no_stream, "Whole responses instead of SSE streams");
  c->add_flag("--json", a->json, "One JSON object on stdout (an array for a sweep)");
  c->add_option("--dataset", a->dataset, "random | sharegpt | prefix | multiturn")->default_val("random");
  c->add_option("--dataset-path", a->dataset_path, "The ShareGPT JSON file");
  c->add_option("--tokenizer", a->tokenizer_dir, "The target model's tokenizer folder: text prompts of exact length");
  c->add_option("--random-range-ratio", a->range_ratio, "Lengths drawn from [len*(1-r), len*(1+r)]")->default_val(0);
  c->add_option("--random-prefix-len", a->random_prefix_len, "Random dataset: a prefix every prompt shares");
  c->add_option("--prefix-num", a->num_prefixes, "Shared-prefix dataset: prefixes")->default_val(10);
  c->add_option("--prefix-len", a->prefix_len, "Shared-prefix dataset: prefix tokens")->default_val(256);
  c->add_option("--suffix-len", a->suffix_len, "Shared-prefix dataset: suffix tokens")->default_val(256);
  c->add_option("--turns", a->turns, "Multi-turn dataset: user turns per conversation (--num-prompts conversations)")
      ->default_val(3);
  c->add_option("--sharegpt-output-len", a->sharegpt_output_len, "ShareGPT: a fixed output length");
  c->add_option("--sweep", a->sweep, "concurrency:1,4,16 | rate:1,2,4 | guidellm[:N]");
  c->add_option("--goodput", a->goodput, "SLOs in ms, e.g. \"ttft:500 tpot:50 e2el:2000\"");
  c->add_option("--warmup", a->warmup, "Requests sent first, one at a time, not measured")->default_val(0);
  c->add_flag("--save-result", a->save_result, "Write the result JSON (to --result-file, or a dated name)");
  c->add_flag("--in-process", a->in_process, "Drive the engine directly (no HTTP), on the CPU");
  c->add_option("--model-dir", a->model_dir, "--in-process: the model folder");
  c->add_flag("--no-ignore-eos", a->no_ignore_eos, "Leave ignore_eos out (servers that reject it)");
  c->add_flag("--prompt-ids", a->prefer_ids, "Completions: send token ids even when a text prompt exists");
  c->callback([a] {
    a->load.seed = a->work.seed;
    run_bench_serve(*a);
  });
}

}  // namespace inferdesk::cli
