// MoeRunner's FP8 experts: the layer's E4M3 weights and scales validated into the kernels' table,
// and the three paths with E4M3 kernels (moe_fp8.h). Path choice, capture rules and the combine
// are the BF16 paths' (moe_runner.cpp):
// - small (decode): each chosen expert multiplied once with all of its tokens, the activation
//   quantization and the SwiGLU fused (moe_fp8_experts_small);
// - grouped: the pairs sorted by expert on the device, x quantized once per token, E4M3 tensor-core
//   kernels over (row tile, expert) blocks (moe_fp8_experts_grouped);
// - large: per chunk, the pairs sorted and their offsets copied to the host, the token rows
//   gathered and quantized in one kernel (scales laid out per expert for cuBLASLt), per expert one
//   cuBLASLt FP8 GEMM for gate | up into F32, one kernel for the SwiGLU and the quantization of its
//   result, per expert one down GEMM, the combine. A shape cuBLASLt has no algorithm for takes the
//   CUDA-core FP8 GEMM.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "core/util/error.h"
#include "cuda/backend/kernel_policy.h"
#include "cuda/backend/moe_layout.h"
#include "cuda/backend/moe_runner.h"

namespace inferdesk::cuda {

namespace {

[[noreturn]] void unsupported_experts(int32_t layer, const QuantInfo& q, const std::string& why) {
  throw Error(ErrorCode::Unsupported, "the CUDA backend cannot run the FP8 experts of layer " + std::to_string(layer) +
                                          " (" + describe(q) + "): " + why + "; run this model with --backend cpu");
}

// A weight of `rows` rows starting at m's data, with m's scheme (a stacked gate | up seen whole).
Tensor whole(const Tensor& m, int64_t rows) {
  Tensor t = m;
  t.rows = rows;
  return t;
}

// The scales of the up half of a stacked gate | up weight of 2 * inter rows.
const float* up_scales(const Fp8Weight& gu, int64_t inter) {
  if (gu.gran == Fp8Gran::Tensor) return gu.scales;
  if (gu.gran == Fp8Gran::Channel) return gu.scales + inter;
  return gu.scales + (inter / kFp8Block) * gu.scale_cols;
}

// Expert e's rows [r0, r0 + n) of quantized rows laid out per expert segment (moe_fp8_quantize's
// segments).
Fp8X segment(const Fp8X& x, int32_t e, int64_t r0, int64_t n) {
  Fp8X s = x;
  s.q = x.q + r0 * x.stride;
  s.rows = n;
  s.scales = x.scales + moe_fp8_segment_scales(r0, e, x.groups);
  return s;
}

// Whether cuBLASLt is asked: its 128 x 128 block scaling is used on whole blocks only (the
// published shapes); partial ones take the CUDA-core kernel, which follows the CPU's definition.
bool cublas_shape(const Fp8Weight& w) {
  return w.gran != Fp8Gran::Block || (w.n % kFp8Block == 0 && w.k % kFp8Block == 0);
}

}  // namespace

MoeFp8Table MoeLayerTable::fp8_table(int32_t num_experts) const {
  MoeFp8Table f;
  f.w = static_cast<const uint8_t* const*>(dev.get());
  f.s = reinterpret_cast<const float* const*>(static_cast<const void* const*>(dev.get()) + 3 * num_experts);
  f.num_experts = num_experts;
  f.hidden = hidden;
  f.inter = inter;
  f.block = q.block;
  for (int m = 0; m < 3; ++m) f.per_row[m] = q.per_row[m];
  return f;
}

void MoeRunner::fp8_table(int32_t layer, const std::vector<ExpertWeights>& experts, bool stacked, MoeLayerTable& t) {
  const size_t E = experts.size();
  const int64_t I = t.inter;
  MoeFp8Layer& q = t.q;
  q = {};
  t.fp8 = true;
  std::vector<const void*> codes(3 * E), scales(3 * E);
  const QuantInfo& first = *experts[0].gate.quant;
  q.block = first.granularity == ScaleGranularity::Block;
  // A stacked gate | up is one weight of 2 I rows (one QuantInfo); separate ones have their own.
  bool one = stacked;
  for (size_t e = 0; e < E; ++e) one = one && experts[e].gate.quant == experts[e].up.quant;
  t.stacked = one;
  for (size_t e = 0; e < E; ++e) {
    const ExpertWeights& w = experts[e];
    for (const Tensor* m : {&w.gate, &w.up, &w.down}) {
      const QuantInfo& mq = *m->quant;
      if (!KernelPolicy::fp8_supported(mq)) unsupported_experts(layer, mq, "this scheme is not supported");
      if (mq.act == ActQuant::Static)
        unsupported_experts(layer, mq, "static activation scales are not supported for experts");
      if ((mq.granularity == ScaleGranularity::Block) != q.block)
        unsupported_experts(layer, mq, "block and per-channel scales are mixed");
    }
    std::vector<Fp8Weight> gu;
    if (one) {
      gu.push_back(KernelPolicy::fp8_weight(whole(w.gate, 2 * I)));
      if (q.block && I % kFp8Block != 0)
        throw Error(ErrorCode::Internal, "stacked FP8 experts with a partial scale block between gate and up");
    } else {
      gu.push_back(KernelPolicy::fp8_weight(w.gate));
      gu.push_back(KernelPolicy::fp8_weight(w.up));
    }
    const Fp8Weight down = KernelPolicy::fp8_weight(w.down);
    const bool per_row[3] = {gu[0].gran == Fp8Gran::Channel, gu.back().gran == Fp8Gran::Channel,
                             down.gran == Fp8Gran::Channel};
    for (int m = 0; m < 3; ++m) {
      if (e > 0 && per_row[m] != q.per_row[m])
        unsupported_experts(layer, first, "experts mix per-tensor and per-channel scales");
      q.per_row[m] = per_row[m];
    }
    codes[e] = w.gate.data;
    codes[E + e] = w.up.data;
    codes[2 * E + e] = w.down.data;
    scales[e] = gu[0].scales;
    scales[E + e] = one ? up_scales(gu[0], I) : gu[1].scales;
    scales[2 * E + e] = down.scales;
    q.gate_up.insert(q.gate_up.end(), gu.begin(), gu.end());
    q.down.push_back(down);
  }
  if (!one) {  // separate: gate[E] then up[E]
    std::vector<Fp8Weight> g(E), u(E);
    for (size_t e = 0; e < E; ++e) g[e] = q.gate_up[2 * e], u[e] = q.gate_up[2 * e + 1];
    q.gate_up = g;
    q.gate_up.insert(q.gate_up.end(), u.begin(), u.end());
  }
  t.host = codes;
  t.host.insert(t.host.end(), scales.begin(), scales.end());
}

void MoeRunner::run_small_fp8(const MoeLayerTable& tbl, const MoeStepArgs& step) {
  const int64_t P = int64_t{kMoeSmallMaxTokens} * step.top_k;
  const size_t act_bytes = align256(static_cast<size_t>(P * tbl.inter) * 4);
  grow_scratch(small_scratch_, act_bytes + static_cast<size_t>(P * tbl.hidden) * 4, "MoE scratch");
  MoeFp8SmallArgs a;
  static_cast<MoeStepArgs&>(a) = step;
  a.fp8 = tbl.fp8_table(step.experts.num_experts);
  a.act = small_scratch_.as<float>();
  a.slot_out = reinterpret_cast<float*>(small_scratch_.as<char>() + act_bytes);
  moe_fp8_experts_small(a, ctx_.launch);
}

void MoeRunner::run_grouped_fp8(const MoeLayerTable& tbl, int64_t max_pairs, const MoeStepArgs& step) {
  const int32_t E = step.experts.num_experts;
  const int64_t H = tbl.hidden, I = tbl.inter;
  // Sized for the bound, not for this step: one allocation serves every step the path takes.
  const Fp8MoeLayout L = fp8_grouped_layout(max_pairs, E, H, I, tbl.q.block);
  grow_scratch(grouped_scratch_, L.total, "MoE grouped scratch");
  char* base = grouped_scratch_.as<char>();
  MoeFp8GroupedArgs a;
  static_cast<MoeStepArgs&>(a) = step;
  a.fp8 = tbl.fp8_table(E);
  a.counts = reinterpret_cast<int32_t*>(base + L.counts);
  a.offsets = reinterpret_cast<int32_t*>(base + L.offsets);
  a.order = reinterpret_cast<int32_t*>(base + L.order);
  a.position = reinterpret_cast<int32_t*>(base + L.position);
  a.xq = moe_fp8_x_at(base + L.xq, max_pairs, H, tbl.q.block);
  a.act = reinterpret_cast<float*>(base + L.f32);
  a.aq = moe_fp8_x_at(base + L.aq, max_pairs, I, tbl.q.block);
  a.y = reinterpret_cast<float*>(base + L.y);
  a.max_pairs = max_pairs;
  moe_fp8_experts_grouped(a, ctx_.launch);
}

void MoeRunner::run_large_fp8(const MoeLayerTable& tbl, const MoeStepArgs& step) {
  const int64_t T = step.x.rows, H = tbl.hidden, I = tbl.inter;
  const int32_t E = step.experts.num_experts, k = step.top_k;
  const bool block = tbl.q.block;
  const int64_t chunk = large_chunk(tbl, k, grouped_bytes(tbl, tbl.small_ok ? grouped_pairs(E) : 0));
  const Fp8MoeLayout L = fp8_moe_layout(std::min(T, chunk) * k, E, H, I, block, true);
  ctx_.memory.grow(large_scratch_, L.total, L.total, MemKind::Activations, "MoE scratch", ctx_.stream);
  char* base = large_scratch_.as<char>();
  auto* counts = reinterpret_cast<int32_t*>(base + L.counts);
  auto* offsets = reinterpret_cast<int32_t*>(base + L.offsets);
  auto* order = reinterpret_cast<int32_t*>(base + L.order);
  auto* position = reinterpret_cast<int32_t*>(base + L.position);
  auto* gu = reinterpret_cast<float*>(base + L.f32);
  auto* y = reinterpret_cast<float*>(base + L.y);
  auto* host_off = static_cast<int32_t*>(offsets_host_.get((static_cast<size_t>(E) + 1) * 4));
  auto matmul = [&](const Fp8X& x, const Fp8Weight& w, const Mat& out) {
    if (!cublas_shape(w) || !fp8_gemm_.run(x, w, nullptr, out)) fp8_gemm_simple(x, w, nullptr, out, ctx_.launch);
  };

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
      MoeFp8QuantArgs qx;
      qx.src = part.x.data;
      qx.src_stride = part.x.stride;
      qx.order = order;
      qx.top_k = k;
      qx.segments = offsets;
      qx.num_segments = E;
      qx.group = block;
      qx.out = moe_fp8_x_at(base + L.xq, valid, H, block);
      moe_fp8_quantize(qx, ctx_.launch);
      for (int32_t e = 0; e < E; ++e) {
        const int64_t rows = host_off[e + 1] - host_off[e], r0 = host_off[e];
        if (rows == 0) continue;
        const Fp8X xe = segment(qx.out, e, r0, rows);
        if (tbl.stacked) {
          matmul(xe, tbl.q.gate_up[e], Mat{gu + r0 * 2 * I, Dt::F32, rows, 2 * I, 2 * I});
        } else {
          matmul(xe, tbl.q.gate_up[e], Mat{gu + r0 * 2 * I, Dt::F32, rows, I, 2 * I});
          matmul(xe, tbl.q.gate_up[E + e], Mat{gu + r0 * 2 * I + I, Dt::F32, rows, I, 2 * I});
        }
      }
      MoeFp8QuantArgs qa;
      qa.src = gu;
      qa.src_f32 = true;
      qa.src_stride = 2 * I;
      qa.swiglu = true;
      qa.up_offset = I;
      qa.segments = offsets;
      qa.num_segments = E;
      qa.group = block;
      qa.out = moe_fp8_x_at(base + L.aq, valid, I, block);
      moe_fp8_quantize(qa, ctx_.launch);
      for (int32_t e = 0; e < E; ++e) {
        const int64_t rows = host_off[e + 1] - host_off[e], r0 = host_off[e];
        if (rows == 0) continue;
        matmul(segment(qa.out, e, r0, rows), tbl.q.down[e], Mat{y + r0 * H, Dt::F32, rows, H, H});
      }
    }
    moe_combine(moe_combine_args(part, y, position), ctx_.launch);
  }
}

}  // namespace inferdesk::cuda
