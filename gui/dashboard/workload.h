// The dashboard's workload, as the editor shows it: a dataset of core/bench (vLLM's random with a
// range ratio, a ShareGPT file, shared prefixes, multi-turn chats), lengths, an optional tokenizer
// folder (exact-length text prompts; without one, random prompts are token ids below
// token_id_max), the API (completions or chat), the load (request rate with burstiness and/or a
// concurrency cap), a sweep (concurrency list, rate list, guidellm's sweep), warm-up, seed and
// goodput SLOs. Presets are the issue's: chat 550/150, long prompt 2,048/128, offline 128/128 at
// max concurrency, sweep 1→256. prepare_benchmark() turns it into run_benchmark's inputs; no
// widgets here.
#pragma once

#include <QString>

#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/bench/benchmark.h"
#include "core/tokenizer/tokenizer.h"

namespace inferdesk::gui {

enum class Dataset { Random, ShareGpt, Prefix, MultiTurn };
enum class SweepKind { None, Concurrency, Rate, Guidellm };

struct WorkloadSpec {
  QString preset;
  Dataset dataset = Dataset::Random;
  int input_len = 128, output_len = 128;  // ShareGPT: output 0 keeps each reply's own length
  double range_ratio = 0;     // random: lengths drawn from len * [1 - r, 1 + r]
  QString sharegpt_path;      // ShareGPT: the conversation file
  int num_prefixes = 4;       // shared prefix: prompts are prefix_len + input_len tokens
  int prefix_len = 256;
  int turns = 3;              // multi-turn: requests_per_point conversations of this many turns
  QString tokenizer_dir;      // "" : token-id prompts (random / prefix only)
  bool chat_api = false;      // /v1/chat/completions instead of /v1/completions
  bool ignore_eos = true;     // fixed output lengths where the server accepts it
  int requests_per_point = 16;
  double request_rate = 0;    // requests/s; 0: all at once
  double burstiness = 1;      // gamma shape of arrivals (1: Poisson)
  int max_concurrency = 0;    // 0: no cap
  SweepKind sweep = SweepKind::None;
  QString sweep_values;       // "1, 4, 16" (concurrencies or rates)
  int guidellm_points = 10;
  int warmup = 0;
  uint64_t seed = 0;
  int token_id_max = 10000;   // id prompts use ids below this (a vocabulary every target has)
  QString goodput;            // "ttft:500 tpot:50 e2el:2000" (ms), "" : none
};

struct WorkloadPreset {
  QString name;
  WorkloadSpec spec;
};

std::vector<WorkloadPreset> workload_presets();
nlohmann::json to_json(const WorkloadSpec& w);
QString dataset_name(Dataset d);

// The sweep as core/bench parses it; throws Error(InvalidArgument) naming what is wrong.
bench::Sweep sweep_of(const WorkloadSpec& w);
// Everything checked before a run starts (sweep, SLOs, lengths, a dataset's needs); "" when fine.
QString validate(const WorkloadSpec& w);

// run_benchmark's inputs. tokenizer: the folder's, loaded here (may stay null).
struct PreparedBenchmark {
  std::shared_ptr<const Tokenizer> tokenizer;
  bench::RequestSource source;  // each point's prompts (and the warm-up's), drawn apart
  bench::BenchmarkSpec spec;
};
// Throws Error (InvalidArgument for a workload that cannot be built, NotFound / Io / Format for
// the tokenizer or ShareGPT file).
PreparedBenchmark prepare_benchmark(const WorkloadSpec& w, const std::string& model, const std::vector<double>& percents);

}  // namespace inferdesk::gui
