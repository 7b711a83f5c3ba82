#include "core/sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "core/sample/logits_math.h"
#include "core/util/error.h"

namespace inferdesk {
namespace {

void check_ids(std::span<const int32_t> ids, size_t vocab, const char* what) {
  for (int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= vocab) {
      throw Error(ErrorCode::InvalidArgument, std::string(what) + " token id " + std::to_string(id) +
                                                  " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
    }
  }
}

// Higher value first, then lower id.
struct ByValueDesc {
  std::span<const float> v;
  bool operator()(int32_t a, int32_t b) const { return v[a] > v[b] || (v[a] == v[b] && a < b); }
};

// The top-k threshold: the k-th largest value among tokens still in play (w > 0), or -inf when
// no more than k are in play. Tokens out of play (-inf logits, or dropped by min_p) always have
// smaller values than every token in play, so the k-th largest of all values is the same.
float top_k_threshold(std::span<const float> v, std::span<const float> w, size_t k) {
  if (count_positive(w) <= k) return -INFINITY;
  return kth_largest(v, k);
}

// Walks `ids` (sorted best first) accumulating weight from `cum`; zeroes the weight of every id
// after the first one at which the running sum reaches target.
void cut_sorted(const std::vector<int32_t>& ids, std::span<float> w, double cum, double target) {
  size_t j = 0;
  for (; j < ids.size(); ++j) {
    cum += w[static_cast<size_t>(ids[j])];
    if (cum >= target) break;
  }
  for (size_t k = j + 1; k < ids.size(); ++k) w[static_cast<size_t>(ids[k])] = 0.0f;
}

// Top-p over many tokens: bands of 1/8 nat below the best value `mx`. A binary search over
// vectorised masked sums finds the narrowest band whose mass reaches `target`; tokens inside the
// band before it are kept, tokens outside the band are dropped, and only the boundary slice is
// sorted. O(V log 256) vectorised work plus a sort of one slice.
void top_p_by_bands(std::span<const float> v, std::span<float> w, float mx, double target) {
  constexpr float kScale = 8.0f;  // bands per nat
  constexpr int kBands = 256;     // the last band holds everything
  auto limit_of = [](int b) { return b >= kBands - 1 ? INFINITY : static_cast<float>(b + 1); };
  int lo = 0, hi = kBands - 1;  // smallest band b with sum_within(limit_of(b)) >= target
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (sum_within(v, w, mx, kScale, limit_of(mid)) >= target) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  const float inner = lo == 0 ? -INFINITY : limit_of(lo - 1);
  const float outer = limit_of(lo);
  const double cum = lo == 0 ? 0.0 : sum_within(v, w, mx, kScale, inner);
  std::vector<int32_t> edge;
  for (size_t i = 0; i < v.size(); ++i) {
    const float d = (mx - v[i]) * kScale;
    if (w[i] > 0.0f && d < outer && !(d < inner)) edge.push_back(static_cast<int32_t>(i));
  }
  zero_outside(v, w, mx, kScale, outer);
  std::sort(edge.begin(), edge.end(), ByValueDesc{v});
  cut_sorted(edge, w, cum, target);
}

// Keeps the smallest most-likely-first set (ties: lower id first) whose weight reaches top_p of
// the weight still in play; zeroes the rest. At least one token stays.
void apply_top_p(std::span<const float> v, std::span<float> w, float mx, float top_p, bool few) {
  const double target = static_cast<double>(top_p) * sum(w);
  if (!few) {
    top_p_by_bands(v, w, mx, target);
    return;
  }
  std::vector<int32_t> ids;
  append_positive(w, ids);
  std::sort(ids.begin(), ids.end(), ByValueDesc{v});
  cut_sorted(ids, w, 0.0, target);
}

// Temperature, min_p, top-k, top-p over the penalised logits `v` (modified). Leaves in `weights`
// the unnormalised probabilities to draw from; filters zero the tokens they exclude.
void filtered_weights(std::span<float> v, const SamplingParams& p, std::vector<float>& weights) {
  divide(v, p.temperature);
  weights.resize(v.size());
  std::span<float> w(weights);
  const float mx = max_value(v);
  exp_shifted(v, mx, w);                       // the best token has weight 1
  if (p.min_p > 0.0f) zero_below(w, p.min_p);  // below min_p times the best probability
  const bool top_k_on = p.top_k > 0 && static_cast<size_t>(p.top_k) < v.size();
  if (top_k_on) zero_where_less(v, top_k_threshold(v, w, static_cast<size_t>(p.top_k)), w);
  if (p.top_p < 1.0f) apply_top_p(v, w, mx, p.top_p, top_k_on && p.top_k <= 1024);
}

// Rejects rows the sampler cannot use; returns logsumexp of the raw candidate logits. Token ids
// are checked against the whole row (`vocab`): ids of a padded vocabulary are valid inputs.
double checked_log_normalizer(std::span<const float> logits, size_t vocab, std::span<const int32_t> prompt_ids,
                              std::span<const int32_t> output_ids) {
  if (logits.empty()) throw Error(ErrorCode::InvalidArgument, "sample: empty logits row");
  if (has_nan(logits)) throw Error(ErrorCode::Internal, "sample: logits contain NaN");
  const float raw_max = max_value(logits);
  if (!std::isfinite(raw_max)) {
    throw Error(ErrorCode::Internal, "sample: logits have no finite maximum (all -inf, or +inf)");
  }
  check_ids(prompt_ids, vocab, "prompt");
  check_ids(output_ids, vocab, "output");
  return log_sum_exp(logits, raw_max);
}

// Penalties over the candidate row `logits`; ids at or beyond its end (valid ids of a padded
// vocabulary that are never sampled) are skipped. The caller has checked the ids.
void penalise_candidates(std::span<float> logits, const SamplingParams& params, std::span<const int32_t> prompt_ids,
                         std::span<const int32_t> output_ids) {
  const auto inside = [&](int32_t id) { return static_cast<size_t>(id) < logits.size(); };
  if (params.repetition_penalty != 1.0f) {
    // Each distinct token of prompt + output once: O(n log n) in the ids, not O(V).
    std::vector<int32_t> seen(prompt_ids.begin(), prompt_ids.end());
    seen.insert(seen.end(), output_ids.begin(), output_ids.end());
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    const float rp = params.repetition_penalty;
    for (int32_t id : seen) {
      if (!inside(id)) continue;
      float& l = logits[static_cast<size_t>(id)];
      l = l > 0 ? l / rp : l * rp;
    }
  }
  if (params.frequency_penalty == 0.0f && params.presence_penalty == 0.0f) return;
  std::vector<int32_t> sorted(output_ids.begin(), output_ids.end());
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
    if (inside(sorted[i])) {
      float& l = logits[static_cast<size_t>(sorted[i])];
      l -= params.frequency_penalty * static_cast<float>(j - i);
      l -= params.presence_penalty;
    }
    i = j;
  }
}

}  // namespace

void apply_penalties(std::span<float> logits, const SamplingParams& params, std::span<const int32_t> prompt_ids,
                     std::span<const int32_t> output_ids) {
  check_ids(prompt_ids, logits.size(), "prompt");
  check_ids(output_ids, logits.size(), "output");
  penalise_candidates(logits, params, prompt_ids, output_ids);
}

std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, double log_z, int32_t k) {
  std::vector<TokenLogprob> out;
  if (k <= 0 || logits.empty()) return out;
  const size_t n = std::min(static_cast<size_t>(k), logits.size());
  // Min-heap (by "better") of the best n seen so far: the root is the worst of them.
  auto better = [](const TokenLogprob& a, const TokenLogprob& b) {
    return a.logprob > b.logprob || (a.logprob == b.logprob && a.id < b.id);
  };
  std::vector<TokenLogprob> heap;
  heap.reserve(n + 1);
  constexpr size_t kBlock = 1024;
  for (size_t i = 0; i < logits.size(); ++i) {
    // Later tokens have higher ids, so they must beat the worst kept value strictly; a block
    // whose maximum does not is skipped whole.
    if (heap.size() == n && i % kBlock == 0) {
      const size_t len = std::min(kBlock, logits.size() - i);
      if (!(max_value(logits.subspan(i, len)) > heap.front().logprob)) {
        i += len - 1;
        continue;
      }
    }
    if (heap.size() == n && !(logits[i] > heap.front().logprob)) continue;  // cheap reject
    TokenLogprob t{static_cast<int32_t>(i), logits[i]};                     // raw logit for now
    if (heap.size() < n) {
      heap.push_back(t);
      std::push_heap(heap.begin(), heap.end(), better);
    } else {
      std::pop_heap(heap.begin(), heap.end(), better);
      heap.back() = t;
      std::push_heap(heap.begin(), heap.end(), better);
    }
  }
  std::sort(heap.begin(), heap.end(), better);
  for (auto& t : heap) t.logprob = static_cast<float>(static_cast<double>(t.logprob) - log_z);
  return heap;
}

std::span<const float> Sampler::candidates(std::span<const float> logits) const {
  if (vocab_limit_ > 0 && static_cast<size_t>(vocab_limit_) < logits.size())
    return logits.first(static_cast<size_t>(vocab_limit_));
  return logits;
}

SampleResult Sampler::sample(std::span<const float> row, const SamplingParams& params,
                             std::span<const int32_t> prompt_ids, std::span<const int32_t> output_ids, SamplerRng& rng,
                             SamplerScratch& scratch) const {
  // Masking ids beyond the limit as -inf is the same as sampling from the first ids only.
  const std::span<const float> logits = candidates(row);
  const double log_z = checked_log_normalizer(logits, row.size(), prompt_ids, output_ids);
  SampleResult r;
  if (params.is_greedy() && !params.has_penalties()) {
    r.token = static_cast<int32_t>(argmax(logits));
  } else {
    std::vector<float>& work = scratch.work;
    work.assign(logits.begin(), logits.end());
    penalise_candidates(work, params, prompt_ids, output_ids);
    if (params.is_greedy()) {
      r.token = static_cast<int32_t>(argmax(work));
    } else {
      filtered_weights(work, params, scratch.weights);
      r.token = static_cast<int32_t>(draw_index(scratch.weights, rng.uniform()));
    }
  }
  r.logprob = static_cast<float>(static_cast<double>(logits[static_cast<size_t>(r.token)]) - log_z);
  r.top = top_logprobs(logits, log_z, params.logprobs);
  return r;
}

std::vector<float> Sampler::distribution(std::span<const float> row, const SamplingParams& params,
                                         std::span<const int32_t> prompt_ids,
                                         std::span<const int32_t> output_ids) const {
  const std::span<const float> logits = candidates(row);
  checked_log_normalizer(logits, row.size(), prompt_ids, output_ids);
  std::vector<float> work(logits.begin(), logits.end());
  penalise_candidates(work, params, prompt_ids, output_ids);
  std::vector<float> w;
  if (params.is_greedy()) {
    w.assign(work.size(), 0.0f);
    w[argmax(work)] = 1.0f;
  } else {
    filtered_weights(work, params, w);
    const double total = sum(w);
    for (float& x : w) x = static_cast<float>(x / total);
  }
  w.resize(row.size(), 0.0f);  // ids beyond the limit: never drawn
  return w;
}

}  // namespace inferdesk
