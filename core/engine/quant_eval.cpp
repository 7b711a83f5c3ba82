#include "core/engine/quant_eval.h"

#include <algorithm>
#include <cmath>

#include "core/engine/engine.h"
#include "core/engine/generate.h"
#include "core/util/error.h"

namespace inferdesk {
void teacher_forced_log_probs(LoadedModel& m, const std::vector<int32_t>& ids, int32_t chunk, KvCacheDtype kv,
                              const std::function<void(int32_t, const std::vector<float>&)>& row,
                              const std::function<bool()>& tick) {
  const int32_t T = static_cast<int32_t>(ids.size()) - 1, bs = 16, blocks = (T + bs - 1) / bs;
  KvCacheShape shape;
  shape.num_layers = static_cast<int32_t>(m.config.num_hidden_layers);
  shape.num_blocks = blocks;
  shape.block_size = bs;
  shape.num_kv_heads = static_cast<int32_t>(m.config.num_key_value_heads);
  shape.head_dim = static_cast<int32_t>(m.config.head_dim);
  shape.dtype = kv;
  m.model->reserve(*m.backend, chunk, chunk);
  m.backend->init_kv_cache(shape);
  std::vector<float> host, lp;
  for (int32_t c0 = 0; c0 < T; c0 += chunk) {
    const int32_t n = std::min(chunk, T - c0);
    StepInput step;
    step.block_size = bs;
    for (int32_t i = 0; i < n; ++i) {
      step.token_ids.push_back(ids[c0 + i]);
      step.positions.push_back(c0 + i);
      step.slot_mapping.push_back(c0 + i);
      step.logit_rows.push_back(i);
    }
    const int32_t used = (c0 + n + bs - 1) / bs;
    step.seqs.push_back({0, n, c0 + n, 0, used});
    for (int32_t b = 0; b < used; ++b) step.block_tables.push_back(b);
    const Tensor logits = m.model->forward(*m.backend, step);
    host.resize(static_cast<size_t>(logits.rows * logits.cols));
    m.backend->to_host(logits, host.data());
    for (int32_t i = 0; i < n; ++i) {
      const float* l = host.data() + static_cast<size_t>(i) * logits.cols;
      const double mx = *std::max_element(l, l + logits.cols);
      double sum = 0;
      for (int64_t v = 0; v < logits.cols; ++v) sum += std::exp(l[v] - mx);
      const double lse = mx + std::log(sum);
      lp.resize(static_cast<size_t>(logits.cols));
      for (int64_t v = 0; v < logits.cols; ++v) lp[v] = static_cast<float>(l[v] - lse);
      row(c0 + i, lp);
    }
    if (tick && !tick()) throw Error(ErrorCode::Cancelled, "the quantization report was cancelled");
  }
}

namespace {

// Decode tok/s of one greedy request (8 prompt tokens, 64 generated) on the loaded model.
double decode_rate(LoadedModel m, const std::vector<int32_t>& ids) {
  EngineOptions o;
  o.num_kv_blocks = 16;
  Engine engine(std::move(m), o);
  Request r;
  r.prompt_ids.assign(ids.begin(), ids.begin() + std::min<size_t>(8, ids.size()));
  r.params.temperature = 0;
  r.params.max_tokens = 64;
  r.params.ignore_eos = true;
  generate_all(engine, {r});  // warm-up (graphs, kernel choices)
  const GenerationResult g = generate_all(engine, {r}).at(0);
  const auto& t = g.token_times_s;
  return t.size() > 1 && t.back() > t.front() ? static_cast<double>(t.size() - 1) / (t.back() - t.front()) : 0.0;
}

}  // namespace

QuantEvalReport evaluate_quantization(const std::filesystem::path& dir, const std::vector<int32_t>& text_ids,
                                      const std::function<std::unique_ptr<Backend>()>& make_backend,
                                      const QuantEvalOptions& options) {
  std::vector<int32_t> ids(text_ids.begin(),
                           text_ids.begin() + std::min<size_t>(text_ids.size(), std::max(options.max_tokens, 2)));
  if (ids.size() < 2) throw Error(ErrorCode::InvalidArgument, "the evaluation text has fewer than two tokens");
  const int32_t T = static_cast<int32_t>(ids.size()) - 1;
  const int32_t chunks = (T + options.chunk - 1) / options.chunk;
  int32_t done = 0;
  auto tick = [&] { return !options.progress || options.progress(static_cast<double>(++done) / (2 * chunks)); };
  QuantEvalReport r;
  r.tokens = T;
  // The unquantized distributions (F32 log-probabilities: F16 would round the likely tokens' by
  // 1e-3, as much as the KL measured): T x vocab floats.
  std::vector<std::vector<float>> base(static_cast<size_t>(T));
  double nll_base = 0, nll_quant = 0;
  std::vector<int32_t> argmax(static_cast<size_t>(T));
  {
    LoadedModel m = load_model_folder(dir, make_backend());
    r.weight_bytes_base = m.weight_bytes;
    teacher_forced_log_probs(
        m, ids, options.chunk, KvCacheDtype::Auto,
        [&](int32_t i, const std::vector<float>& lp) {
          nll_base -= lp[static_cast<size_t>(ids[i + 1])];
          argmax[i] = static_cast<int32_t>(std::max_element(lp.begin(), lp.end()) - lp.begin());
          base[i] = lp;
        },
        tick);
    if (options.measure_speed) r.decode_tps_base = decode_rate(std::move(m), ids);
  }
  LoadOptions lo;
  lo.quantization = options.quantized_dir.empty() ? options.quantization : LoadQuantization::None;
  LoadedModel q = load_model_folder(options.quantized_dir.empty() ? dir : options.quantized_dir, make_backend(), {}, lo);
  r.weight_bytes_quant = q.weight_bytes;
  int32_t agree = 0;
  double kl_sum = 0;
  teacher_forced_log_probs(
      q, ids, options.chunk, KvCacheDtype::Auto,
      [&](int32_t i, const std::vector<float>& lp) {
        nll_quant -= lp[static_cast<size_t>(ids[i + 1])];
        double kl = 0;
        for (size_t v = 0; v < lp.size(); ++v) {
          const double b = base[i][v];
          kl += std::exp(b) * (b - lp[v]);
        }
        kl = std::max(kl, 0.0);  // rounding can leave -1e-9 where the distributions are equal
        kl_sum += kl;
        r.kl_max = std::max(r.kl_max, kl);
        agree += static_cast<int32_t>(std::max_element(lp.begin(), lp.end()) - lp.begin()) == argmax[i];
      },
      tick);
  if (options.measure_speed) r.decode_tps_quant = decode_rate(std::move(q), ids);
  r.perplexity_base = std::exp(nll_base / T);
  r.perplexity_quant = std::exp(nll_quant / T);
  r.kl_mean = kl_sum / T;
  r.top1_agreement = static_cast<double>(agree) / T;
  return r;
}

}  // namespace inferdesk
