// How much a quantization changes a model: the model loaded as published and quantized (e.g. FP8
// on load) run teacher-forced over the same text, compared token by token: perplexity of each,
// the KL divergence of the quantized next-token distribution from the unquantized one, top-1
// agreement, the weight bytes each keeps and, on request, decode tok/s of each.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include "core/backend/backend.h"
#include "core/engine/model_loader.h"

namespace inferdesk {

struct QuantEvalOptions {
  LoadQuantization quantization = LoadQuantization::Fp8;
  // When set, the quantized side is this folder as published (e.g. the AWQ folder written from the
  // model) and `quantization` is not used.
  std::filesystem::path quantized_dir;
  int32_t max_tokens = 256;    // of the text, cut at this many (the reference keeps tokens x vocab floats)
  int32_t chunk = 128;         // tokens per forward step
  bool measure_speed = false;  // also time a short batch-1 decode of each (GPU backends)
  // (fraction done 0..1); return false to cancel (Error Cancelled).
  std::function<bool(double)> progress;
};

struct QuantEvalReport {
  int32_t tokens = 0;  // positions compared
  double perplexity_base = 0, perplexity_quant = 0;
  double kl_mean = 0, kl_max = 0;
  double top1_agreement = 0;  // fraction of positions whose most likely token is the same
  int64_t weight_bytes_base = 0, weight_bytes_quant = 0;
  double decode_tps_base = 0, decode_tps_quant = 0;  // 0 unless measured
};

// Teacher-forced next-token log-probabilities of `ids` on `m`: the model runs `ids` in steps of
// `chunk` tokens through a fresh paged cache of dtype `kv`, and row(i, log-softmax over the
// vocabulary) is called for each position i < ids.size() - 1; tick (may be empty) after each step,
// false cancels (Error Cancelled).
void teacher_forced_log_probs(LoadedModel& m, const std::vector<int32_t>& ids, int32_t chunk, KvCacheDtype kv,
                              const std::function<void(int32_t, const std::vector<float>&)>& row,
                              const std::function<bool()>& tick = {});

// `make_backend` is called once per model (each loads on a backend of its own, one after the
// other, so only one is in memory at a time). Throws Error (InvalidArgument for fewer than two
// tokens, Cancelled, and whatever loading throws).
QuantEvalReport evaluate_quantization(const std::filesystem::path& dir, const std::vector<int32_t>& text_ids,
                                      const std::function<std::unique_ptr<Backend>()>& make_backend,
                                      const QuantEvalOptions& options = {});

}  // namespace inferdesk
