// MoeRunner: the experts of MoE layers and their counters (routing and the shared expert's gate are
// plain kernels, in cuda_ops.cpp).
//
// Threading and streams: like every op these are called from the engine thread only and enqueue
// on the compute stream. moe_route, sigmoid_gate_add and the small-batch and grouped expert paths only enqueue
// kernels, so they run inside the captured decode graphs. The large-batch path copies each chunk's
// per-expert offsets to the host and synchronises the compute stream (once per chunk of tokens), so begin_step
// never captures a step that takes it (max_capturable_rows).
// expert_counts() synchronises. Device memory that captured graphs point at (the expert pointer
// tables, the counters, the small-path and grouped-path scratch) only moves outside a capture, and
// moving it invalidates the graphs.
//
// Paths of moe_experts (same rounding points: gate and up accumulated in F32, the SwiGLU activations
// rounded to BF16 as in the dense layers, expert outputs in F32, each token's slots summed in slot
// order 0..k-1 by moe_combine; only the order of the dot products' additions differs):
// - small: at most kMoeSmallMaxTokens rows (decode) and experts whose sizes and alignment allow
//   16-byte loads: per (token, slot) pair a GEMV over the chosen expert (moe_experts_small).
// - grouped: more rows, up to the pair bound (grouped_pairs: CudaBackendOptions::moe_grouped_max_pairs
//   and moe_grouped_pairs_per_expert), same size/alignment conditions: the pairs sorted by expert
//   on the device, then tensor-core kernels over (row tile, expert) blocks that read each expert's
//   pair range from device memory (moe_experts_grouped). Its scratch is sized for the bound once,
//   so every step it serves, captured or not, uses the same addresses.
// - large: per chunk of tokens (scratch bounded by CudaBackendOptions::moe_scratch_bytes), the pairs stably sorted
//   by expert on the device, the offsets copied to the host, the rows gathered in that order, then
//   for each expert that received pairs one cuBLASLt GEMM for gate and up into F32 (two when they
//   are not stacked), one SiLU*up over all rows into BF16, one down GEMM into F32 rows, and the
//   weighted combine.
#include "cuda/backend/moe_runner.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "core/util/error.h"
#include "cuda/kernels/elementwise.h"

namespace inferdesk::cuda {

namespace {

size_t align256(size_t b) { return (b + 255) / 256 * 256; }

// Byte offsets in a scratch buffer, each array 256-byte aligned.
struct ScratchCursor {
  size_t at = 0;
  size_t take(size_t bytes) {
    const size_t o = at;
    at += align256(bytes);
    return o;
  }
};

// The pair sort's arrays (moe_sort_pairs), first in both paths' scratch, for `pairs` pairs.
struct SortLayout {
  size_t counts = 0, offsets = 0, order = 0, position = 0;
};
SortLayout take_sort(ScratchCursor& c, size_t pairs, int32_t experts) {
  SortLayout l;
  l.counts = c.take(static_cast<size_t>(experts) * 4);
  l.offsets = c.take((static_cast<size_t>(experts) + 1) * 4);
  l.order = c.take(pairs * 4);
  l.position = c.take(pairs * 4);
  return l;
}

// Byte offsets of the large path's arrays in its scratch for `pairs` (token, slot) pairs.
struct LargeLayout : SortLayout {
  size_t xs = 0, gu = 0, act = 0, y = 0, total = 0;
};
LargeLayout large_layout(int64_t pairs, int32_t experts, int64_t hidden, int64_t inter) {
  const auto P = static_cast<size_t>(pairs), H = static_cast<size_t>(hidden), I = static_cast<size_t>(inter);
  ScratchCursor c;
  LargeLayout l;
  static_cast<SortLayout&>(l) = take_sort(c, P, experts);
  l.xs = c.take(P * H * 2);      // gathered token rows, BF16
  l.gu = c.take(P * 2 * I * 4);  // gate | up per pair, F32 (as the small path's accumulators)
  l.act = c.take(P * I * 2);     // silu(gate) * up, BF16
  l.y = c.take(P * H * 4);       // expert outputs, F32
  l.total = c.at;
  return l;
}

// Byte offsets of the grouped path's arrays in its scratch for up to `pairs` pairs.
struct GroupedLayout : SortLayout {
  size_t act = 0, y = 0, total = 0;
};
GroupedLayout grouped_layout(int64_t pairs, int32_t experts, int64_t hidden, int64_t inter) {
  const auto P = static_cast<size_t>(pairs), H = static_cast<size_t>(hidden), I = static_cast<size_t>(inter);
  ScratchCursor c;
  GroupedLayout l;
  static_cast<SortLayout&>(l) = take_sort(c, P, experts);
  l.act = c.take(P * I * 2);  // silu(gate) * up, BF16, sorted order
  l.y = c.take(P * H * 4);    // expert outputs, F32, sorted order
  l.total = c.at;
  return l;
}

// Tokens per chunk of the large path: as many as fit in `cap` bytes of scratch (at least one).
int64_t large_chunk_tokens(size_t cap, int32_t top_k, int32_t experts, int64_t hidden, int64_t inter) {
  const size_t fixed = large_layout(0, experts, hidden, inter).total + 6 * 256;  // + alignment slack
  const auto per_pair = static_cast<size_t>(8 + 6 * hidden + 10 * inter);
  const size_t room = cap > fixed ? cap - fixed : 0;
  return std::max<int64_t>(1, static_cast<int64_t>(room / per_pair) / top_k);
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

[[noreturn]] void bad_experts(int32_t layer, const std::string& why) {
  throw Error(ErrorCode::Unsupported, "the CUDA backend cannot run the experts of layer " + std::to_string(layer) +
                                          ": " + why + "; run this model with --backend cpu");
}

}  // namespace

MoeRunner::MoeRunner(CudaContext& ctx, Gemm& gemm, const CudaBackendOptions& o)
    : ctx_(ctx),
      gemm_(gemm),
      small_batch_(o.small_batch_gemv),
      grouped_max_pairs_(o.moe_grouped_max_pairs),
      grouped_pairs_per_expert_(o.moe_grouped_pairs_per_expert),
      scratch_bytes_(o.moe_scratch_bytes) {
  if (scratch_bytes_ <= 0) {
    size_t free_b = 0, total_b = 0;
    check_cuda(cudaMemGetInfo(&free_b, &total_b), "querying GPU memory");
    scratch_bytes_ = std::clamp<int64_t>(static_cast<int64_t>(total_b / 64), 256LL << 20, 2LL << 30);
  }
}

int32_t MoeRunner::small_max_rows() const { return small_batch_ && small_ok_ ? kMoeSmallMaxTokens : 0; }

int64_t MoeRunner::grouped_pairs(int32_t num_experts) const {
  if (!small_batch_ || grouped_max_pairs_ <= 0 || grouped_pairs_per_expert_ <= 0) return 0;
  return std::min<int64_t>(grouped_max_pairs_, int64_t{grouped_pairs_per_expert_} * num_experts);
}

int32_t MoeRunner::max_capturable_rows() const {
  if (!moe_model_) return std::numeric_limits<int32_t>::max();
  const int32_t grouped = small_batch_ && small_ok_ ? std::max(grouped_rows_, 0) : 0;
  return std::max(small_max_rows(), grouped);
}

int64_t MoeRunner::reserved_bytes() const {
  if (!moe_model_) return 0;
  return std::max<int64_t>(0, scratch_bytes_ - static_cast<int64_t>(large_scratch_.bytes()) -
                                  static_cast<int64_t>(grouped_scratch_.bytes()));
}

const MoeLayerTable& MoeRunner::table(int32_t layer, const std::vector<ExpertWeights>& experts) {
  const size_t E = experts.size();
  MoeLayerTable& t = tables_[layer];
  bool same = t.dev.get() != nullptr && t.host.size() == 3 * E;
  for (size_t e = 0; same && e < E; ++e)
    same = t.host[e] == experts[e].gate.data && t.host[E + e] == experts[e].up.data &&
           t.host[2 * E + e] == experts[e].down.data;
  if (same) return t;

  if (E == 0) bad_experts(layer, "it has no experts");
  const int64_t H = experts[0].gate.cols, I = experts[0].gate.rows;
  bool stacked = true, aligned = true;
  for (size_t e = 0; e < E; ++e) {
    const ExpertWeights& w = experts[e];
    for (const Tensor* m : {&w.gate, &w.up, &w.down}) {
      if (m->quant)
        throw Error(ErrorCode::Unsupported, "the CUDA backend does not run quantized experts yet (" +
                                                describe(*m->quant) + "); load this model on the CPU");
      if (m->dtype != DType::BF16 || m->stride != m->cols)
        throw Error(ErrorCode::Internal, "moe_experts: expert weights must be contiguous BF16");
      aligned = aligned && aligned16(m->data);
    }
    if (w.gate.rows != I || w.gate.cols != H || w.up.rows != I || w.up.cols != H || w.down.rows != H ||
        w.down.cols != I)
      bad_experts(layer, "expert " + std::to_string(e) + " has a different shape than expert 0 " +
                             "(one intermediate size per layer is supported)");
    stacked = stacked && static_cast<const char*>(w.up.data) == static_cast<const char*>(w.gate.data) + I * H * 2;
  }
  ctx_.graphs.forbid_capture(("the expert table of layer " + std::to_string(layer) + " first needed").c_str());
  std::vector<const void*> host(3 * E);
  for (size_t e = 0; e < E; ++e) {
    host[e] = experts[e].gate.data;
    host[E + e] = experts[e].up.data;
    host[2 * E + e] = experts[e].down.data;
  }
  if (t.dev.get()) {  // the views changed (a test, or another model on this backend): graphs are stale
    ctx_.synchronize();
    t.dev.reset();
    ctx_.graphs.invalidate();
  }
  t.dev = ctx_.memory.alloc(host.size() * sizeof(void*), MemKind::Activations, "MoE expert tables");
  // On the compute stream, so ordered before every kernel that reads the table (a plain cudaMemcpy
  // from pageable memory may return before its DMA lands, and the stream does not wait for the
  // legacy stream); the pageable source has been staged when the call returns.
  check_cuda(cudaMemcpyAsync(t.dev.get(), host.data(), host.size() * sizeof(void*), cudaMemcpyHostToDevice,
                             ctx_.stream),
             "uploading the expert table");
  t.host = std::move(host);
  t.hidden = H;
  t.inter = I;
  t.stacked = stacked;
  t.small_ok = aligned && moe_small_supported(H, I);
  if (!t.small_ok && small_ok_) {
    small_ok_ = false;  // no MoE step is captured from now on
    ctx_.graphs.invalidate();
  }
  return t;
}

void MoeRunner::experts(int32_t layer, const Tensor& x, const std::vector<ExpertWeights>& experts, const Tensor& ids,
                        const Tensor& weights, Tensor out, const int32_t* row_slots) {
  const int64_t T = x.rows;
  const auto E = static_cast<int32_t>(experts.size());
  if (x.dtype != DType::BF16 || ids.dtype != DType::I32 || weights.dtype != DType::F32 || ids.rows != T ||
      weights.rows != T || weights.cols != ids.cols || ids.cols <= 0 || out.rows != T || out.cols != x.cols)
    throw Error(ErrorCode::Internal, "moe_experts: shapes or dtypes do not match (x BF16, ids I32, weights F32)");
  const MoeLayerTable& tbl = table(layer, experts);
  if (x.cols != tbl.hidden)
    throw Error(ErrorCode::Internal,
                "moe_experts: x has " + std::to_string(x.cols) + " columns, the experts " + std::to_string(tbl.hidden));
  if (T == 0) return;
  const auto k = static_cast<int32_t>(ids.cols);
  MoeStepArgs step;
  step.x = as_mat(x);
  step.ids = static_cast<const int32_t*>(ids.data);
  step.ids_stride = ids.stride;
  step.weights = static_cast<const float*>(weights.data);
  step.weights_stride = weights.stride;
  step.top_k = k;
  step.experts.gate = static_cast<const bf16* const*>(tbl.dev.get());
  step.experts.up = step.experts.gate + E;
  step.experts.down = step.experts.gate + 2 * static_cast<int64_t>(E);
  step.experts.num_experts = E;
  step.experts.hidden = tbl.hidden;
  step.experts.inter = tbl.inter;
  step.out = as_mat(out);
  step.counters = counters_.get() && layer >= 0 && layer < counter_layers_ && E <= counter_experts_
                      ? counters_.as<unsigned long long>() + static_cast<int64_t>(layer) * counter_experts_
                      : nullptr;
  step.row_slots = row_slots;

  // The grouped path's bound for this layer, in pairs and in rows (max_capturable_rows reads the
  // min over the layers; every layer runs in the eager step that precedes a bucket's capture).
  const int64_t pairs = tbl.small_ok ? grouped_pairs(E) : 0;
  grouped_rows_ = grouped_rows_ < 0 ? static_cast<int32_t>(pairs / k)
                                    : std::min(grouped_rows_, static_cast<int32_t>(pairs / k));
  // (x is the decoder's activation buffer, always aligned; a misaligned view takes the large path.)
  const bool x_vec = aligned16(x.data) && (T == 1 || x.stride % 8 == 0);
  if (T <= small_max_rows() && tbl.small_ok && x_vec) {
    run_small(tbl, step);
    ++path_counts_.small;
  } else if (T * k <= pairs && x_vec) {
    run_grouped(tbl, pairs, step);
    ++path_counts_.grouped;
  } else {
    ctx_.graphs.forbid_capture("the large-batch MoE path (it synchronises)");
    run_large(tbl, step);
    ++path_counts_.large;
  }
}

void MoeRunner::run_small(const MoeLayerTable& tbl, const MoeStepArgs& step) {
  const int64_t P = int64_t{kMoeSmallMaxTokens} * step.top_k;
  const size_t act_bytes = align256(static_cast<size_t>(P * tbl.inter) * 2);
  const size_t need = act_bytes + static_cast<size_t>(P * tbl.hidden) * 4;
  if (need > small_scratch_.bytes()) {
    ctx_.graphs.forbid_capture("MoE scratch first needed");
    ctx_.memory.grow(small_scratch_, need, need, MemKind::Activations, "MoE scratch", ctx_.stream);
    ctx_.graphs.invalidate();
  }
  MoeSmallArgs a;
  static_cast<MoeStepArgs&>(a) = step;
  a.act = small_scratch_.as<bf16>();
  a.slot_out = reinterpret_cast<float*>(small_scratch_.as<char>() + act_bytes);
  moe_experts_small(a, ctx_.launch);
}

void MoeRunner::run_grouped(const MoeLayerTable& tbl, int64_t max_pairs, const MoeStepArgs& step) {
  const int32_t E = step.experts.num_experts;
  // Sized for the bound, not for this step: one allocation serves every step the path takes.
  const GroupedLayout L = grouped_layout(max_pairs, E, tbl.hidden, tbl.inter);
  if (L.total > grouped_scratch_.bytes()) {
    ctx_.graphs.forbid_capture("MoE grouped scratch first needed");
    ctx_.memory.grow(grouped_scratch_, L.total, L.total, MemKind::Activations, "MoE grouped scratch", ctx_.stream);
    ctx_.graphs.invalidate();
  }
  char* base = grouped_scratch_.as<char>();
  MoeGroupedArgs a;
  static_cast<MoeStepArgs&>(a) = step;
  a.counts = reinterpret_cast<int32_t*>(base + L.counts);
  a.offsets = reinterpret_cast<int32_t*>(base + L.offsets);
  a.order = reinterpret_cast<int32_t*>(base + L.order);
  a.position = reinterpret_cast<int32_t*>(base + L.position);
  a.act = reinterpret_cast<bf16*>(base + L.act);
  a.y = reinterpret_cast<float*>(base + L.y);
  a.max_pairs = max_pairs;
  moe_experts_grouped(a, ctx_.launch);
}

void MoeRunner::run_large(const MoeLayerTable& tbl, const MoeStepArgs& step) {
  const int64_t T = step.x.rows, H = tbl.hidden, I = tbl.inter;
  const int32_t E = step.experts.num_experts, k = step.top_k;
  // The grouped path's scratch (allocated or still to come) is taken from the budget first.
  const int64_t pairs = tbl.small_ok ? grouped_pairs(E) : 0;
  const auto grouped_bytes = static_cast<int64_t>(
      std::max(grouped_scratch_.bytes(), pairs > 0 ? grouped_layout(pairs, E, H, I).total : 0));
  const int64_t chunk = large_chunk_tokens(static_cast<size_t>(std::max<int64_t>(scratch_bytes_ - grouped_bytes, 0)), k,
                                           E, H, I);
  const LargeLayout L = large_layout(std::min(T, chunk) * k, E, H, I);
  ctx_.memory.grow(large_scratch_, L.total, L.total, MemKind::Activations, "MoE scratch", ctx_.stream);
  char* base = large_scratch_.as<char>();
  auto* counts = reinterpret_cast<int32_t*>(base + L.counts);
  auto* offsets = reinterpret_cast<int32_t*>(base + L.offsets);
  auto* order = reinterpret_cast<int32_t*>(base + L.order);
  auto* position = reinterpret_cast<int32_t*>(base + L.position);
  auto* xs = reinterpret_cast<bf16*>(base + L.xs);
  auto* gu = reinterpret_cast<float*>(base + L.gu);
  auto* act = reinterpret_cast<bf16*>(base + L.act);
  auto* y = reinterpret_cast<float*>(base + L.y);
  auto* host_off = static_cast<int32_t*>(offsets_host_.get((static_cast<size_t>(E) + 1) * 4));
  const auto* ptr = reinterpret_cast<const bf16* const*>(tbl.host.data());
  const bf16* const* gate = ptr;
  const bf16* const* up = ptr + E;
  const bf16* const* down = ptr + 2 * static_cast<int64_t>(E);

  for (int64_t t0 = 0; t0 < T; t0 += chunk) {
    const int64_t n = std::min(chunk, T - t0);
    const MoeStepArgs part = moe_step_rows(step, t0, n);
    moe_sort_pairs(part.ids, part.ids_stride, static_cast<int32_t>(n), k, E, counts, offsets, order, position,
                   ctx_.launch);
    check_cuda(cudaMemcpyAsync(host_off, offsets, (static_cast<size_t>(E) + 1) * 4, cudaMemcpyDeviceToHost,
                               ctx_.stream),
               "copying the MoE expert offsets");
    ctx_.synchronize();                 // the one host synchronisation of the chunk: which experts got how many pairs
    const int32_t valid = host_off[E];  // pairs with a valid expert id (all, from moe_route)
    if (valid > 0) {
      moe_gather_pairs(part.x, order, valid, k, Mat{xs, Dt::BF16, valid, H, H}, ctx_.launch);
      for (int32_t e = 0; e < E; ++e) {
        const int64_t rows = host_off[e + 1] - host_off[e];
        if (rows == 0) continue;
        const int64_t r0 = host_off[e];
        const Mat xe{xs + r0 * H, Dt::BF16, rows, H, H};
        if (tbl.stacked) {
          gemm_.run(xe, gate[e], 2 * I, H, nullptr, Mat{gu + r0 * 2 * I, Dt::F32, rows, 2 * I, 2 * I}, ctx_.stream,
                    /*autotune=*/false);
        } else {
          gemm_.run(xe, gate[e], I, H, nullptr, Mat{gu + r0 * 2 * I, Dt::F32, rows, I, 2 * I}, ctx_.stream, false);
          gemm_.run(xe, up[e], I, H, nullptr, Mat{gu + r0 * 2 * I + I, Dt::F32, rows, I, 2 * I}, ctx_.stream, false);
        }
      }
      silu_mul(Mat{gu, Dt::F32, valid, I, 2 * I}, Mat{gu + I, Dt::F32, valid, I, 2 * I},
               Mat{act, Dt::BF16, valid, I, I}, ctx_.launch);
      for (int32_t e = 0; e < E; ++e) {
        const int64_t rows = host_off[e + 1] - host_off[e];
        if (rows == 0) continue;
        const int64_t r0 = host_off[e];
        gemm_.run(Mat{act + r0 * I, Dt::BF16, rows, I, I}, down[e], H, I, nullptr, Mat{y + r0 * H, Dt::F32, rows, H, H},
                  ctx_.stream, false);
      }
    }
    moe_combine(moe_combine_args(part, y, position), ctx_.launch);
  }
}

void MoeRunner::init_counters(int32_t num_layers, int32_t num_experts) {
  if (num_layers < 0 || num_experts < 0) throw Error(ErrorCode::InvalidArgument, "init_expert_counters: negative size");
  ctx_.graphs.forbid_capture("init_expert_counters");
  const size_t n = static_cast<size_t>(num_layers) * static_cast<size_t>(num_experts);
  if (n != static_cast<size_t>(counter_layers_) * static_cast<size_t>(counter_experts_) || !counters_.get()) {
    if (counters_.get()) {
      ctx_.synchronize();
      counters_.reset();
    }
    if (n > 0) counters_ = ctx_.memory.alloc(n * 8, MemKind::Activations, "expert counters");
    ctx_.graphs.invalidate();  // captured combines hold the old counters' address
  }
  counter_layers_ = num_layers;
  counter_experts_ = num_experts;
  if (counters_.get())
    check_cuda(cudaMemsetAsync(counters_.get(), 0, n * 8, ctx_.stream), "clearing the expert counters");
  const bool moe = num_experts > 1;
  if (moe != moe_model_) ctx_.graphs.invalidate();
  moe_model_ = moe;
}

std::vector<int64_t> MoeRunner::counts() {
  const size_t n = static_cast<size_t>(counter_layers_) * static_cast<size_t>(counter_experts_);
  if (!counters_.get() || n == 0) return {};
  std::vector<unsigned long long> raw(n);
  // Ordered after every op enqueued so far; the legacy-stream copy below then reads final counts.
  ctx_.synchronize();
  check_cuda(cudaMemcpy(raw.data(), counters_.get(), n * 8, cudaMemcpyDeviceToHost), "reading the expert counters");
  return std::vector<int64_t>(raw.begin(), raw.end());
}

}  // namespace inferdesk::cuda
