// FP8 experts on both backends for the MoE op tests: E4M3 codes over the whole range with random
// scales (fp8_test_util.h's make_fp8_weight), loaded as the decoder loads them (CPU: separate
// weights; GPU: gate and up stacked into one weight of 2 I rows with stacked scales, or separate),
// and the tolerances of a GPU output against the CPU backend's FP8 experts.
//
// Tolerances (normalised error of the BF16 output against the CPU's F32):
// - small and grouped paths: both sides quantize the same BF16 x with the same F32 operations (bit
//   for bit, as GpuFp8Quant checks for the dense kernels), every product of two E4M3 values is
//   exact, the sums differ only in their order (a few 1e-7 relative), and silu(gate) * up stays F32
//   on both sides before it is quantized, so its E4M3 codes almost never differ: the output's BF16
//   rounding (RMS ~1.1e-3) dominates, and kTolMoeFp8 = kTolBf16 (5e-3) keeps a 4x margin.
// - large path: cuBLASLt's FP8 matmul keeps about 14 bits of its running sums (fp8_test_util.h:
//   ~2e-4 over K = 2048), which moves some 0.3% of the act codes by one E4M3 step (~9%): ~5e-3 after
//   the down projection, plus the rounding: kTolMoeFp8Large = 2e-2.
// A wrong expert, token, slot, scale or 128-group gives errors of 0.1 and more.
#pragma once

#include <deque>
#include <vector>

#include "tests/gpu/kernels/fp8_test_util.h"
#include "tests/gpu/moe/moe_harness.h"

namespace inferdesk::gputest {

constexpr double kTolMoeFp8 = kTolBf16;
constexpr double kTolMoeFp8Large = 2e-2;

struct Fp8ExpertsSpec {
  int E;
  int64_t H, I;
  Fp8Scheme scheme;
  bool stacked;  // GPU gate | up as one weight (channel or block with I % 128 == 0)
};

// Codes and scales must outlive the CPU backend's views of them.
struct Fp8Experts {
  MoePair::Experts ex;
  std::deque<HostFp8> host;
};

inline HostTensor fp8_host_tensor(const HostFp8& w) {
  HostTensor h;
  h.name = "moe_fp8_weight";
  h.dtype = DType::F8E4M3;
  h.shape = {w.n, w.k};
  h.data = reinterpret_cast<const std::byte*>(w.codes.data());
  h.nbytes = w.codes.size();
  return h;
}

// gate | up stacked on the GPU, as folder_weights' stack_scales does: one scale per row (per-tensor
// scales repeated) or the block rows of both.
inline Tensor load_stacked_fp8(MoePair& p, const HostFp8& g, const HostFp8& u) {
  Buffer b = p.gpu().load_weight_rows({fp8_host_tensor(g), fp8_host_tensor(u)}, g.k);
  QuantInfo q = g.q;
  std::vector<float> s;
  if (q.granularity == ScaleGranularity::Block) {
    s = g.scales;
    s.insert(s.end(), u.scales.begin(), u.scales.end());
    q.scale_rows = g.q.scale_rows + u.q.scale_rows;
  } else {
    for (const HostFp8* w : {&g, &u})
      for (int64_t r = 0; r < w->n; ++r) s.push_back(w->scales[w->q.granularity == ScaleGranularity::Tensor ? 0 : r]);
    q.granularity = ScaleGranularity::Channel;
    q.scale_rows = g.n + u.n;
    q.scale_cols = 1;
  }
  b.set_quant(q, p.gpu().load_scales(s.data(), q.scale_rows, q.scale_cols));
  return p.keep(std::move(b));
}

inline Fp8Experts make_fp8_experts(MoePair& p, const Fp8ExpertsSpec& s, uint64_t seed) {
  Fp8Experts out;
  for (int e = 0; e < s.E; ++e) {
    const uint64_t base = seed * 1000 + static_cast<uint64_t>(e) * 3;
    const HostFp8& g = out.host.emplace_back(make_fp8_weight(s.I, s.H, s.scheme, base));
    const HostFp8& u = out.host.emplace_back(make_fp8_weight(s.I, s.H, s.scheme, base + 1));
    const HostFp8& d = out.host.emplace_back(make_fp8_weight(s.H, s.I, s.scheme, base + 2));
    ExpertWeights c;
    c.gate = p.keep(load_fp8(p.cpu(), g));
    c.up = p.keep(load_fp8(p.cpu(), u));
    c.down = p.keep(load_fp8(p.cpu(), d));
    out.ex.cpu.push_back(c);
    ExpertWeights w;
    if (s.stacked) {
      const Tensor gu = load_stacked_fp8(p, g, u);
      w.gate = gu.row_slice(0, s.I);
      w.up = gu.row_slice(s.I, s.I);
    } else {
      w.gate = p.keep(load_fp8(p.gpu(), g));
      w.up = p.keep(load_fp8(p.gpu(), u));
    }
    w.down = p.keep(load_fp8(p.gpu(), d));
    out.ex.gpu.push_back(w);
  }
  p.gpu().synchronize();
  return out;
}

// The Fp8Scheme of the test cases: per-channel (compressed-tensors) or 128 x 128 blocks.
inline Fp8Scheme fp8_channel() { return {ScaleGranularity::Channel, ActQuant::DynamicToken}; }
inline Fp8Scheme fp8_tensor() { return {ScaleGranularity::Tensor, ActQuant::DynamicToken}; }
inline Fp8Scheme fp8_block() { return {ScaleGranularity::Block, ActQuant::DynamicGroup}; }

}  // namespace inferdesk::gputest
