#include "gui/dashboard/workload.h"

#include <QObject>
#include <QStringList>

#include <cmath>
#include <limits>

#include "core/bench/workload_multiturn.h"
#include "core/bench/workload_prefix.h"
#include "core/bench/workload_random.h"
#include "core/bench/workload_sharegpt.h"
#include "core/util/error.h"

namespace inferdesk::gui {

std::vector<WorkloadPreset> workload_presets() {
  auto make = [](const char* name, int in, int out, int n, SweepKind sweep, const char* values, int cap) {
    WorkloadSpec w;
    w.preset = name;
    w.input_len = in;
    w.output_len = out;
    w.requests_per_point = n;
    w.sweep = sweep;
    w.sweep_values = values;
    w.max_concurrency = cap;
    return WorkloadPreset{name, w};
  };
  return {
      make("Chat 550/150", 550, 150, 32, SweepKind::Concurrency, "1, 4, 16", 0),
      make("Long prompt 2,048/128", 2048, 128, 32, SweepKind::Concurrency, "1, 4, 16", 0),
      // Offline: every request at once, no cap (vLLM's offline throughput setting).
      make("Offline 128/128 (max concurrency)", 128, 128, 256, SweepKind::None, "", 0),
      make("Sweep 1\u2192256 (128/128)", 128, 128, 64, SweepKind::Concurrency, "1, 2, 4, 8, 16, 32, 64, 128, 256", 0),
  };
}

QString dataset_name(Dataset d) {
  switch (d) {
    case Dataset::Random: return "random";
    case Dataset::ShareGpt: return "sharegpt";
    case Dataset::Prefix: return "prefix";
    case Dataset::MultiTurn: return "multiturn";
  }
  return "random";
}

nlohmann::json to_json(const WorkloadSpec& w) {
  const char* sweeps[] = {"none", "concurrency", "rate", "guidellm"};
  nlohmann::json j = {{"dataset", dataset_name(w.dataset).toStdString()},
                      {"preset", w.preset.toStdString()},
                      {"input_len", w.input_len},
                      {"output_len", w.output_len},
                      {"num_prompts", w.requests_per_point},
                      {"endpoint", w.chat_api ? "/v1/chat/completions" : "/v1/completions"},
                      {"request_rate", w.request_rate > 0 ? nlohmann::json(w.request_rate) : nlohmann::json("inf")},
                      {"burstiness", w.burstiness},
                      {"max_concurrency", w.max_concurrency},
                      {"sweep", sweeps[static_cast<int>(w.sweep)]},
                      {"sweep_values", w.sweep_values.toStdString()},
                      {"warmup", w.warmup},
                      {"seed", w.seed},
                      {"ignore_eos", w.ignore_eos},
                      {"goodput", w.goodput.toStdString()},
                      {"tokenizer", w.tokenizer_dir.toStdString()}};
  if (w.dataset == Dataset::Random) j["range_ratio"] = w.range_ratio;
  if (w.dataset == Dataset::Random && w.tokenizer_dir.isEmpty()) j["token_id_max"] = w.token_id_max;
  if (w.dataset == Dataset::ShareGpt) j["dataset_path"] = w.sharegpt_path.toStdString();
  if (w.dataset == Dataset::Prefix) j.update({{"num_prefixes", w.num_prefixes}, {"prefix_len", w.prefix_len}});
  if (w.dataset == Dataset::MultiTurn) j["turns"] = w.turns;
  return j;
}

bench::Sweep sweep_of(const WorkloadSpec& w) {
  QString values = w.sweep_values;
  values.remove(' ');
  switch (w.sweep) {
    case SweepKind::None: return {};
    case SweepKind::Concurrency: return bench::parse_sweep("concurrency:" + values.toStdString());
    case SweepKind::Rate: return bench::parse_sweep("rate:" + values.toStdString());
    case SweepKind::Guidellm: {
      bench::Sweep s = bench::parse_sweep("guidellm:" + std::to_string(w.guidellm_points));
      if (w.max_concurrency > 0) s.guidellm_max_concurrency = w.max_concurrency;
      return s;
    }
  }
  return {};
}

QString validate(const WorkloadSpec& w) {
  try {
    sweep_of(w);
    bench::parse_goodput(w.goodput.toStdString());
  } catch (const std::exception& e) {
    return QString::fromUtf8(e.what());
  }
  if (!(w.burstiness > 0)) return QObject::tr("Burstiness must be above 0 (1: Poisson arrivals).");
  const bool needs_text = w.dataset == Dataset::ShareGpt || w.dataset == Dataset::MultiTurn || w.chat_api;
  if (needs_text && w.tokenizer_dir.isEmpty())
    return QObject::tr("This workload sends text: choose the target model's tokenizer folder.");
  if (w.dataset == Dataset::ShareGpt && w.sharegpt_path.isEmpty()) return QObject::tr("Choose a ShareGPT file.");
  if (w.output_len < 1 && w.dataset != Dataset::ShareGpt)
    return QObject::tr("Output tokens must be at least 1 (0 means the replies' own lengths, ShareGPT only).");
  return {};
}

namespace {

// n requests (conversations for multi-turn) drawn with `seed`; ShareGPT: n from the file.
std::vector<bench::BenchRequest> make_workload_requests(const WorkloadSpec& w, int n, uint64_t seed,
                                                        const bench::BodyOptions& bo, const Tokenizer* tok) {
  switch (w.dataset) {
    case Dataset::Random: {
      bench::RandomDataset d{n, w.input_len, w.output_len, w.range_ratio, 0, seed, 10, std::max(11, w.token_id_max)};
      return bench::make_requests(bench::sample_random(d, tok), bo);
    }
    case Dataset::ShareGpt: {
      bench::ShareGptOptions o{n, w.output_len > 0 ? std::optional<int32_t>(w.output_len) : std::nullopt, seed};
      return bench::make_requests(bench::load_sharegpt(w.sharegpt_path.toStdString(), *tok, o), bo);
    }
    case Dataset::Prefix: {
      const int prefixes = std::max(1, std::min(w.num_prefixes, n));
      bench::PrefixDataset d{n, prefixes, w.prefix_len, w.input_len, w.output_len, seed, 10, std::max(11, w.token_id_max)};
      return bench::make_requests(bench::sample_prefix(d, tok), bo);
    }
    case Dataset::MultiTurn: {
      bench::MultiTurnDataset d{n, w.turns, w.input_len, w.output_len, seed};
      return bench::multiturn_requests(d, *tok, bo);
    }
  }
  return {};
}

}  // namespace

PreparedBenchmark prepare_benchmark(const WorkloadSpec& w, const std::string& model, const std::vector<double>& percents) {
  const QString why = validate(w);
  if (!why.isEmpty()) throw Error(ErrorCode::InvalidArgument, why.toStdString());
  PreparedBenchmark p;
  if (!w.tokenizer_dir.isEmpty())
    p.tokenizer = std::make_shared<const Tokenizer>(Tokenizer::from_dir(w.tokenizer_dir.toStdString()));
  p.spec.sweep = sweep_of(w);
  p.spec.summary.percents = percents;
  p.spec.summary.slo = bench::parse_goodput(w.goodput.toStdString());
  p.spec.summary.tokenizer = p.tokenizer.get();
  p.spec.warmup = w.warmup;
  const bool chat = w.chat_api || w.dataset == Dataset::MultiTurn;
  p.spec.load.endpoint = bench::endpoint_path(chat ? bench::Api::Chat : bench::Api::Completions);
  p.spec.load.request_rate = w.request_rate > 0 ? w.request_rate : std::numeric_limits<double>::infinity();
  p.spec.load.burstiness = w.burstiness;
  p.spec.load.max_concurrency = w.max_concurrency;
  p.spec.load.seed = w.seed;
  // A concurrency point sends at least as many requests as it lets run at once, so every slot is busy.
  int n = w.requests_per_point;
  if (p.spec.sweep.kind == bench::Sweep::Kind::Concurrency)
    for (double c : p.spec.sweep.values) n = std::max(n, static_cast<int>(c));
  bench::BodyOptions bo;
  bo.api = chat ? bench::Api::Chat : bench::Api::Completions;
  bo.model = model;
  bo.ignore_eos = w.ignore_eos;
  n = std::max(1, n);
  const int warmup = std::max(0, w.warmup);
  const Tokenizer* tok = p.tokenizer.get();
  if (w.dataset == Dataset::ShareGpt) {  // one file: enough conversations for each point its own
    const int64_t want = warmup + int64_t(n) * int64_t(bench::point_count(p.spec.sweep));
    auto pool = make_workload_requests(w, int(std::min<int64_t>(want, INT32_MAX)), w.seed, bo, tok);
    p.source = bench::pool_source(std::move(pool), n, warmup, w.seed);
    return p;
  }
  make_workload_requests(w, 1, w.seed, bo, tok);  // a workload that cannot be built fails here, not mid-run
  // The tokenizer is shared so the source stays valid however long the caller keeps it.
  p.source = bench::seeded_source(w.seed, n, warmup, [w, bo, keep = p.tokenizer](uint64_t seed, int32_t count) {
    return make_workload_requests(w, count, seed, bo, keep.get());
  });
  return p;
}

}  // namespace inferdesk::gui
