// inferdesk-cli bench: throughput and latency of the engine on random prompts, with random
// weights of a built-in shape (--dummy) or a real model folder (--model). Each figure is the
// median over --repeat runs after one warm-up run. Never a timed test: run it and record the
// figures in docs/PERF.md.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <random>

#include "apps/cli/bench_progress.h"
#include "apps/cli/bench_table.h"
#include "apps/cli/cli_common.h"
#include "apps/cli/commands.h"
#include "apps/cli/units.h"
#include "core/backend/cuda_option_table.h"
#include "core/util/error.h"

namespace inferdesk::cli {

namespace {

struct BenchArgs {
  std::string model, dummy;
  BackendChoice backend;
  int32_t batch = 1, input_len = 128, output_len = 128, num_requests = 0, repeat = 3;
  int64_t kv_cache_mb = 0;
  int32_t max_batched_tokens = 2048, max_num_seqs = 256;
  bool json = false;
};

struct RunFigures {
  double wall_s = 0, prefill_tps = 0, decode_tps = 0, output_tps = 0;
  double ttft_mean = 0, ttft_median = 0, ttft_p99 = 0, tpot_mean = 0, tpot_median = 0, tpot_p99 = 0;
};

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

std::vector<Request> make_requests(int32_t n, int32_t in_len, int32_t out_len, int64_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> tok(10, static_cast<int32_t>(std::max<int64_t>(vocab - 10, 11)));
  std::vector<Request> out(static_cast<size_t>(n));
  for (auto& r : out) {
    r.prompt_ids.resize(static_cast<size_t>(in_len));
    for (auto& t : r.prompt_ids) t = tok(rng);
    r.params.temperature = 0;
    r.params.max_tokens = out_len;
    r.params.ignore_eos = true;
  }
  return out;
}

// vLLM's definitions: TTFT per request; TPOT = (latency - ttft) / (output tokens - 1).
RunFigures run_once(Engine& engine, const BenchArgs& a, int32_t n, uint64_t seed) {
  auto reqs = make_requests(n, a.input_len, a.output_len, engine.model_config().vocab_size, seed);
  const auto t0 = std::chrono::steady_clock::now();
  const auto results = generate_all(engine, std::move(reqs));
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  RunFigures f;
  f.wall_s = wall;
  std::vector<double> ttft, tpot;
  double prefill_end = 0;
  int64_t out_tokens = 0, decode_tokens = 0;
  for (const auto& r : results) {
    if (r.reason == FinishReason::Error) throw Error(ErrorCode::Internal, "bench request failed: " + r.error);
    ttft.push_back(r.time_to_first_token_s);
    prefill_end = std::max(prefill_end, r.time_to_first_token_s);
    out_tokens += static_cast<int64_t>(r.tokens.size());
    if (r.tokens.size() > 1)
      tpot.push_back((r.elapsed_s - r.time_to_first_token_s) / static_cast<double>(r.tokens.size() - 1));
  }
  // Decode rate: tokens produced after every prompt was in, over the time after that point.
  for (const auto& r : results)
    for (double t : r.token_times_s) decode_tokens += t > prefill_end ? 1 : 0;
  f.prefill_tps = prefill_end > 0 ? static_cast<double>(n) * a.input_len / prefill_end : 0;
  f.decode_tps = wall > prefill_end ? static_cast<double>(decode_tokens) / (wall - prefill_end) : 0;
  f.output_tps = static_cast<double>(out_tokens) / wall;
  f.ttft_mean = mean(ttft);
  f.ttft_median = percentile(ttft, 0.5);
  f.ttft_p99 = percentile(ttft, 0.99);
  f.tpot_mean = mean(tpot);
  f.tpot_median = percentile(tpot, 0.5);
  f.tpot_p99 = percentile(tpot, 0.99);
  return f;
}

// MoE routing over the whole bench (warm-up, prefill and decode tokens), from the engine's
// cumulative per-(layer, expert) counts: the busiest expert's load over the mean, and how many
// experts a decode step of `step_tokens` tokens touches per MoE layer if its tokens pick
// independently with the measured frequencies: sum_e 1 - (1 - q_e)^B, q_e = count_e / tokens (a
// token picks k distinct experts, so q_e <= 1 and sum_e q_e = k). What a step reads of the expert
// weights follows from it (docs/PERF.md, the MoE batch-32 analysis).
nlohmann::json moe_routing(const EngineStats& st, const ModelConfig& c, int64_t step_tokens) {
  const int64_t E = st.num_experts, L = st.num_layers, k = c.num_experts_per_tok;
  if (E <= 0 || L <= 0 || k <= 0 || st.expert_counts.size() != static_cast<size_t>(E * L)) return nullptr;
  double distinct_sum = 0, worst_load = 0;
  int64_t moe_layers = 0;
  for (int64_t l = 0; l < L; ++l) {
    const auto* row = st.expert_counts.data() + l * E;
    const int64_t total = std::accumulate(row, row + E, int64_t{0});
    if (total <= 0) continue;  // a dense layer
    ++moe_layers;
    const double tokens = static_cast<double>(total) / static_cast<double>(k);
    double distinct = 0;
    int64_t most = 0;
    for (int64_t e = 0; e < E; ++e) {
      const double q = std::min(1.0, static_cast<double>(row[e]) / tokens);
      distinct += 1.0 - std::pow(1.0 - q, static_cast<double>(step_tokens));
      most = std::max(most, row[e]);
    }
    distinct_sum += distinct;
    worst_load = std::max(worst_load, static_cast<double>(most) * static_cast<double>(E) / static_cast<double>(total));
  }
  if (moe_layers == 0) return nullptr;
  return {{"experts", E},
          {"top_k", k},
          {"moe_layers", moe_layers},
          {"step_tokens", step_tokens},
          {"expected_distinct_experts_per_step", distinct_sum / static_cast<double>(moe_layers)},
          {"max_expert_load_over_mean", worst_load}};
}

// One warm-up run, then --repeat timed runs, each with its progress on stderr unless --json.
std::vector<RunFigures> warm_up_and_run(Engine& engine, const BenchArgs& a, int32_t n) {
  const bool show = !a.json;
  {
    // Warm-up with the real prompt length and enough requests to meet every decode batch size the
    // timed runs will: GEMM autotuning, the first (eager) step and the capture of each CUDA graph
    // happen here, not in the figures.
    BenchArgs warm = a;
    warm.output_len = 3;
    const int32_t warm_n = std::min(n, a.max_num_seqs);
    RunProgress progress(engine, "warm-up", int64_t{warm_n} * warm.output_len, show);
    run_once(engine, warm, warm_n, 999);
    progress.done("done");
  }
  std::vector<RunFigures> runs;
  for (int32_t i = 0; i < a.repeat; ++i) {
    RunProgress progress(engine, "timed run " + std::to_string(i + 1) + "/" + std::to_string(a.repeat),
                         int64_t{n} * a.output_len, show);
    runs.push_back(run_once(engine, a, n, 1 + i));
    progress.done(format_duration(runs.back().wall_s) + ", decode " + format_rate(runs.back().decode_tps) + " tok/s");
  }
  return runs;
}

// The --json object: the medians of the runs, the engine's counters and its memory.
nlohmann::json report(const Engine& engine, const BenchArgs& a, int32_t n, const std::vector<RunFigures>& runs,
                      int64_t weight_bytes) {
  auto med = [&](double RunFigures::*field) {
    std::vector<double> v;
    for (const auto& r : runs) v.push_back(r.*field);
    return percentile(v, 0.5);
  };
  const EngineStats st = engine.stats();
  nlohmann::json j = {{"model", engine.model().name},
                      {"backend", a.backend.name},
                      {"threads", a.backend.threads},
                      {"mode", a.num_requests > 0 ? "offline" : "online"},
                      {"num_requests", n},
                      {"batch", n},
                      {"input_len", a.input_len},
                      {"output_len", a.output_len},
                      {"repeat", a.repeat},
                      {"weight_bytes", weight_bytes},
                      {"quantization", engine.model().quantization},
                      {"kv_cache_dtype", a.backend.kv_cache_dtype},
                      {"prefill_tokens_per_s", med(&RunFigures::prefill_tps)},
                      {"decode_tokens_per_s", med(&RunFigures::decode_tps)},
                      {"output_tokens_per_s", med(&RunFigures::output_tps)},
                      {"time_to_first_token_s", med(&RunFigures::ttft_mean)},
                      {"ttft_median_s", med(&RunFigures::ttft_median)},
                      {"ttft_p99_s", med(&RunFigures::ttft_p99)},
                      {"tpot_mean_s", med(&RunFigures::tpot_mean)},
                      {"tpot_median_s", med(&RunFigures::tpot_median)},
                      {"tpot_p99_s", med(&RunFigures::tpot_p99)},
                      {"wall_s", med(&RunFigures::wall_s)},
                      // Host memory is the process's resident set (on the CPU the weights are mmapped pages and
                      // the KV cache is mapped lazily, so the backend's reservations would overstate it).
                      {"host_memory_used_bytes", st.process_rss_bytes},
                      // The kernel syncs its RSS counters lazily, so the peak can read a little below the
                      // current figure; the peak is at least what is resident now.
                      {"peak_rss_bytes", std::max(st.process_peak_rss_bytes, st.process_rss_bytes)},
                      // Device memory only a device backend has; 0 on the CPU.
                      {"device_memory_used_bytes", st.memory.device_used},
                      {"kv_cache_bytes", st.memory.kv_cache},
                      {"kv_block_size", a.backend.block_size},
                      // Whether decode steps were overlapped (asked for and the backend can chain steps).
                      {"overlap_steps", a.backend.overlap_steps && engine.model().backend->can_chain_steps()},
                      {"steps", st.steps},
                      {"overlapped_steps", st.overlapped_steps}};
  if (st.memory.device_total > 0) j["device_memory_total_bytes"] = st.memory.device_total;
  if (a.backend.name == "cuda") {
    nlohmann::json opts = nlohmann::json::object();
    for (const CudaOptionInfo& i : cuda_option_list(cuda_backend_options(a.backend))) opts[i.key] = i.value;
    j["cuda_options"] = std::move(opts);
  }
  const int64_t step_tokens = a.num_requests > 0 ? std::min(n, a.max_num_seqs) : n;
  if (nlohmann::json moe = moe_routing(st, engine.model_config(), step_tokens); !moe.is_null())
    j["moe_routing"] = std::move(moe);
  return j;
}

void run_bench(const BenchArgs& a) {
  if (a.batch < 1 || a.input_len < 1 || a.output_len < 1 || a.repeat < 1 || a.num_requests < 0)
    throw Error(ErrorCode::InvalidArgument, "--batch, --input-len, --output-len, --repeat must be >= 1");
  LoadedModel model = load_for_cli(a.model, a.dummy, a.backend, !a.json);
  const int64_t weight_bytes = model.weight_bytes;
  EngineOptions opts = engine_options(a.backend, a.kv_cache_mb);
  if (a.kv_cache_mb == 0 && a.backend.name == "cpu") opts.kv_cache_bytes = 2048LL << 20;
  opts.scheduler.max_num_batched_tokens = a.max_batched_tokens;
  opts.scheduler.max_num_seqs = a.max_num_seqs;
  opts.enable_prefix_caching = false;  // random prompts never share prefixes; measure compute
  Engine engine(std::move(model), opts);
  const int32_t n = a.num_requests > 0 ? a.num_requests : a.batch;
  const std::vector<RunFigures> runs = warm_up_and_run(engine, a, n);
  const nlohmann::json j = report(engine, a, n, runs, weight_bytes);
  if (a.json)
    std::cout << j.dump() << std::endl;
  else
    print_bench_table(std::cout, j, engine.model_config());
}

}  // namespace

void register_bench(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* c = app.add_subcommand("bench", "Measure prefill/decode throughput and latency");
  c->add_option("--model", a->model, "Hugging Face model folder");
  c->add_option("--dummy", a->dummy, "Built-in shape with random weights (e.g. llama-3.2-1b)");
  add_backend_options(c, a->backend);
  c->add_flag("--quantize-lm-head", a->backend.quantize_lm_head,
              "--dummy with an integer --quantization: quantize lm_head too (published AWQ/GPTQ checkpoints "
              "keep it BF16; a tied head becomes a separate quantized copy)");
  c->add_option("--batch", a->batch, "Concurrent requests (online mode)");
  c->add_option("--input-len", a->input_len, "Prompt tokens per request");
  c->add_option("--output-len", a->output_len, "Generated tokens per request");
  c->add_option("--num-requests", a->num_requests, "Offline mode: push N requests at once");
  c->add_option("--repeat", a->repeat, "Timed runs (median reported)");
  c->add_option("--kv-cache-mb", a->kv_cache_mb,
                "KV-cache budget in MiB (0: 2048 on the CPU; on CUDA what the memory fraction leaves)");
  c->add_option("--max-batched-tokens", a->max_batched_tokens, "Tokens per step at most");
  c->add_option("--max-num-seqs", a->max_num_seqs, "Running sequences at most");
  c->add_flag("--json", a->json, "One JSON object on stdout (default: a table; progress on stderr)");
  c->callback([a] { run_bench(*a); });
}

}  // namespace inferdesk::cli
