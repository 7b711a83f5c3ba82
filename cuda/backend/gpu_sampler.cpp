#include "cuda/backend/gpu_sampler.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "core/util/error.h"
#include "cuda/kernels/sample_row.h"
#include "cuda/kernels/sampling.h"

namespace inferdesk::cuda {

namespace {

size_t align16(size_t n) { return (n + 15) & ~size_t{15}; }

// Each row's device parameters and its penalty entries: the distinct tokens of prompt ∪ output
// with their output counts.
struct PackedRows {
  std::vector<SampleRowDev> params;
  std::vector<int32_t> pen_tokens, pen_counts;
};
PackedRows pack_rows(const std::vector<SampleRow>& rows, int32_t V) {
  const auto R = static_cast<int32_t>(rows.size());
  PackedRows out;
  std::vector<SampleRowDev>& params = out.params;
  std::vector<int32_t>& pen_tokens = out.pen_tokens;
  std::vector<int32_t>& pen_counts = out.pen_counts;
  params.resize(rows.size());
  std::unordered_map<int32_t, int32_t> counts;
  for (int32_t i = 0; i < R; ++i) {
    const SamplingParams& p = *rows[i].params;
    SampleRowDev& d = params[i];
    d = make_sample_row(p, rows[i].seed, rows[i].counter);
    d.penalty_start = static_cast<int32_t>(pen_tokens.size());
    if (!p.has_penalties()) continue;
    counts.clear();
    for (int32_t t : rows[i].prompt_ids) counts.emplace(t, 0);
    for (int32_t t : rows[i].output_ids) ++counts[t];
    for (auto [t, c] : counts) {
      if (t < 0)
        throw Error(ErrorCode::InvalidArgument, "token id " + std::to_string(t) + " is outside the vocabulary");
      // Ids past the sampled columns (a padded vocabulary: `logits` is a column view of fewer ids
      // than the model has) are valid but never candidates: no penalty entry, as on the CPU.
      if (t >= V) continue;
      pen_tokens.push_back(t);
      pen_counts.push_back(c);
    }
    d.penalty_count = static_cast<int32_t>(pen_tokens.size()) - d.penalty_start;
  }
  return out;
}

}  // namespace

GpuSampler::GpuSampler(CudaContext& ctx, StepTimer& timer, bool copy_stream)
    : ctx_(ctx),
      timer_(timer),
      copies_(copy_stream ? UniqueStream::create() : UniqueStream()),
      copy_stream_(copy_stream ? copies_.get() : ctx.stream) {
  for (UniqueEvent* group : {params_up_, computed_, done_})
    for (int i = 0; i < 2; ++i) group[i] = UniqueEvent::create();
}

// Both slots grow together; nothing may still read or write the old buffer (the other slot's
// download included: its tokens are then already in its pinned buffer).
void GpuSampler::reserve(size_t slot_need, size_t workspace_need) {
  if (slot_need > slot_bytes_) {
    check_cuda(cudaStreamSynchronize(copy_stream_), "sampling buffers");
    const size_t slot_bytes = (2 * slot_need + 255) / 256 * 256;
    ctx_.memory.grow(io_, 2 * slot_bytes, 2 * slot_bytes, MemKind::Other, "sampling buffers", ctx_.stream);
    slot_bytes_ = slot_bytes;
  }
  ctx_.memory.grow(workspace_, workspace_need, workspace_need, MemKind::Other, "sampling workspace", ctx_.stream);
}

void GpuSampler::launch(const Tensor& logits, const std::vector<SampleRow>& rows) {
  if (pending_.size() >= 2) throw Error(ErrorCode::Internal, "sample_launch: two samplings are already outstanding");
  const auto R = static_cast<int32_t>(rows.size());
  Pending ps;
  ps.rows = R;
  ps.slot = next_slot_;
  if (R > 0 && (logits.dtype != DType::F32 || logits.rows < R))
    throw Error(ErrorCode::Internal, "sample: logits must be F32 with a row per sampled token");
  // The candidate ids: logits.cols, which is less than the row stride when the engine masks a
  // padded vocabulary (EngineOptions::sample_vocab); the kernels read rows by the stride.
  const auto V = static_cast<int32_t>(logits.cols);
  if (logits.stride < logits.cols)
    throw Error(ErrorCode::Internal, "sample: logits row stride is smaller than its columns");
  ps.vocab = V;
  if (R == 0) {
    last_tokens_ = nullptr;  // nothing a chained step could take its tokens from
    last_rows_ = 0;
    pending_.push_back(std::move(ps));
    return;
  }

  PackedRows packed = pack_rows(rows, V);
  const std::vector<SampleRowDev>& params = packed.params;
  const std::vector<int32_t>& pen_tokens = packed.pen_tokens;
  const std::vector<int32_t>& pen_counts = packed.pen_counts;
  ps.num_logprobs.reserve(rows.size());
  for (const SampleRowDev& d : params) ps.num_logprobs.push_back(d.num_logprobs);

  // One device block: [params | penalty tokens | penalty counts | outputs].
  const size_t p_bytes = align16(params.size() * sizeof(SampleRowDev));
  const size_t t_bytes = align16(pen_tokens.size() * 4);
  ps.in_bytes = p_bytes + 2 * t_bytes;
  ps.out_tok = align16(static_cast<size_t>(R) * 4);
  ps.out_lp = align16(static_cast<size_t>(R) * 4);
  const size_t out_top = align16(static_cast<size_t>(R) * kMaxTopLogprobs * 4);
  ps.out_top = out_top;
  const size_t out_bytes = ps.out_tok + ps.out_lp + 2 * out_top;
  reserve(ps.in_bytes + out_bytes, sample_workspace_bytes(R, V));
  // Two pinned buffers and two device slots, alternating: with overlapped steps this launch packs
  // and uploads its parameters while the previous launch's kernels and download may be pending.
  auto* host = static_cast<char*>(host_[ps.slot].get(ps.in_bytes + out_bytes));
  std::memcpy(host, params.data(), params.size() * sizeof(SampleRowDev));
  std::memcpy(host + p_bytes, pen_tokens.data(), pen_tokens.size() * 4);
  std::memcpy(host + p_bytes + t_bytes, pen_counts.data(), pen_counts.size() * 4);
  auto* dev = io_.as<char>() + static_cast<size_t>(ps.slot) * slot_bytes_;
  // The upload runs on the copy stream (while the forward computes); the kernels wait for it.
  const cudaStream_t cs = copy_stream_;
  check_cuda(cudaMemcpyAsync(dev, host, ps.in_bytes, cudaMemcpyHostToDevice, cs), "sampling upload");
  check_cuda(cudaEventRecord(params_up_[ps.slot].get(), cs), "sampling upload");
  check_cuda(cudaStreamWaitEvent(ctx_.stream, params_up_[ps.slot].get(), 0), "sampling upload");

  SampleArgs a;
  a.logits = static_cast<const float*>(logits.data);
  a.logits_stride = logits.stride;
  a.rows = R;
  a.vocab = V;
  a.row_params = reinterpret_cast<const SampleRowDev*>(dev);
  a.penalty_tokens = reinterpret_cast<const int32_t*>(dev + p_bytes);
  a.penalty_counts = reinterpret_cast<const int32_t*>(dev + p_bytes + t_bytes);
  a.workspace = workspace_.get();
  char* o = dev + ps.in_bytes;
  a.out_token = reinterpret_cast<int32_t*>(o);
  a.out_logprob = reinterpret_cast<float*>(o + ps.out_tok);
  a.out_top_ids = reinterpret_cast<int32_t*>(o + ps.out_tok + ps.out_lp);
  a.out_top_logprobs = reinterpret_cast<float*>(o + ps.out_tok + ps.out_lp + out_top);
  sample_rows(a, ctx_.launch);
  timer_.sampling_enqueued();
  // Only what was asked comes back: ids and log-probs always, the top lists when requested.
  const bool any_top = std::any_of(params.begin(), params.end(),
                                   [](const SampleRowDev& d) { return d.num_logprobs > 0; });
  // The download runs on the copy stream once the kernels are done; the compute stream goes on
  // with the next step at once.
  check_cuda(cudaEventRecord(computed_[ps.slot].get(), ctx_.stream), "recording the sampling");
  check_cuda(cudaStreamWaitEvent(cs, computed_[ps.slot].get(), 0), "sampling download");
  check_cuda(cudaMemcpyAsync(host + ps.in_bytes, o, any_top ? out_bytes : ps.out_tok + ps.out_lp,
                             cudaMemcpyDeviceToHost, cs),
             "sampling download");
  check_cuda(cudaEventRecord(done_[ps.slot].get(), cs), "recording the sampling");
  // A chained step (StepInput::tokens_from_last_sample) copies its tokens from here on the device.
  last_tokens_ = a.out_token;
  last_rows_ = R;
  next_slot_ ^= 1;
  pending_.push_back(std::move(ps));
}

void GpuSampler::collect(std::vector<SampledToken>& out) {
  if (pending_.empty()) throw Error(ErrorCode::Internal, "sample_collect without an outstanding sample_launch");
  const Pending ps = std::move(pending_.front());
  pending_.pop_front();
  out.assign(static_cast<size_t>(ps.rows), SampledToken{});
  if (ps.rows == 0) return;
  check_cuda(cudaEventSynchronize(done_[ps.slot].get()), "GPU step");
  const char* ho = static_cast<const char*>(host_[ps.slot].get(0)) + ps.in_bytes;
  const auto* tok = reinterpret_cast<const int32_t*>(ho);
  const auto* lp = reinterpret_cast<const float*>(ho + ps.out_tok);
  const auto* top_ids = reinterpret_cast<const int32_t*>(ho + ps.out_tok + ps.out_lp);
  const auto* top_lp = reinterpret_cast<const float*>(ho + ps.out_tok + ps.out_lp + ps.out_top);
  for (int32_t i = 0; i < ps.rows; ++i) {
    if (tok[i] < 0 || tok[i] >= ps.vocab)
      throw Error(ErrorCode::Internal, "the GPU sampler returned token " + std::to_string(tok[i]));
    out[i].token = tok[i];
    out[i].logprob = lp[i];
    for (int32_t j = 0; j < ps.num_logprobs[i]; ++j)
      out[i].top.push_back(TokenLogprob{top_ids[i * kMaxTopLogprobs + j], top_lp[i * kMaxTopLogprobs + j]});
  }
}

void GpuSampler::abort() {
  if (pending_.empty()) return;
  cudaStreamSynchronize(ctx_.stream);  // nothing in flight reads or writes the buffers afterwards
  cudaStreamSynchronize(copy_stream_);
  cudaGetLastError();
  pending_.clear();
  last_tokens_ = nullptr;
  last_rows_ = 0;
}

}  // namespace inferdesk::cuda
