// Microbenchmark of the elementwise, rope + KV and GEMV kernels on decode/prefill shapes of an
// 8B-class model (not a test). Each measurement captures `iters` launches into one CUDA graph (no
// CPU launch overhead, as in the engine's decode graphs), times graph replays with cudaEvents and
// reports the median time per launch and the bytes moved per second. GEMV weights rotate over
// enough copies to exceed the L2 cache, so every launch streams its weights from DRAM as a real
// decode step does. Kernels are launched with programmatic dependent launch (PDL) unless --no-pdl
// is given. Plain GEMVs are timed with 8 and with 4 warps per block ("w8", "w4"; gemv() uses
// kSmallGridWarps of gemv.cu up to 8192 rows, 8 above). The "layer" lines time a whole decode
// layer without attention (add_rms_norm, qkv GEMV, rope/KV, o GEMV, add_rms_norm, SwiGLU GEMV,
// down GEMV) with PDL on and off, as in a decode graph. The "wide" / "cublaslt" lines time the
// decode-batch GEMMs (M = 16-64) of the Llama-8B projections; the "stream" lines read the same
// weights without arithmetic in several tile patterns (bench_stream.cu): the bound any GEMM with
// that pattern can reach, and each launch's fixed cost.
//
//   bench_gpu_kernels [--no-pdl] [substring]   (only the lines whose name contains the substring)
//   INFERDESK_STREAM_GRID=<blocks>: the "stream" lines on that many blocks (default: one per SM)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "cuda/backend/gemm.h"
#include "cuda/kernels/common.h"
#include "cuda/kernels/elementwise.h"
#include "cuda/kernels/gemv.h"
#include "cuda/kernels/gemv_tuning.h"
#include "cuda/kernels/launch.h"
#include "cuda/kernels/rope_kv.h"
#include "cuda/kernels/sm90a/wide_gemm.h"
#include "tests/gpu/kernels/bench_fp8.h"
#include "tests/gpu/kernels/bench_stream.h"
#include "tests/gpu/kernels/bench_util.h"

namespace {

using namespace inferdesk::cuda;
using namespace inferdesk::benchutil;

// Random BF16 copies of a [rows, cols] weight, enough (copies_for) that launch i reading copy
// i % size() streams it from DRAM.
std::vector<const bf16*> rotating_weights(Pool& pool, int64_t rows, int64_t cols, const Launch& l) {
  std::vector<const bf16*> w;
  const int nc = copies_for(static_cast<size_t>(rows * cols) * 2);
  for (int c = 0; c < nc; ++c)
    w.push_back(static_cast<const bf16*>(random_mat(pool, Dt::BF16, rows, cols, 10 + c, 0.02f, l).data));
  return w;
}

// The Llama-8B projections a decode batch multiplies: W [n, k].
struct Projection {
  const char* what;
  int64_t n, k;
};
constexpr Projection kLlama8BProjections[] = {{"qkv", 6144, 4096},
                                              {"o", 4096, 4096},
                                              {"gate_up", 28672, 4096},
                                              {"down", 4096, 14336}};

void bench_gemv(const Launch& l, const char* filter) {
  const cudaStream_t s = l.stream;
  struct Shape {
    const char* what;
    int64_t n, k;
    Dt ydt;
    bool swiglu;
  };
  const Shape shapes[] = {
      {"o/down 4096", 4096, 4096, Dt::BF16, false},    {"qkv 6144", 6144, 4096, Dt::BF16, false},
      {"gate_up 28672", 28672, 4096, Dt::BF16, false}, {"down 14336", 4096, 14336, Dt::BF16, false},
      {"lm_head F32", 128256, 4096, Dt::F32, false},   {"swiglu 14336", 14336, 4096, Dt::BF16, true},
  };
  for (const Shape& sh : shapes)
    for (int m : {1, 2, 4, 8}) {
      const std::string name = sh.swiglu ? "gemv_swiglu" : "gemv";
      if (!wanted(name, filter)) continue;
      Pool pool;
      const int64_t rows_w = sh.swiglu ? 2 * sh.n : sh.n;
      const size_t wbytes = static_cast<size_t>(rows_w * sh.k) * 2;
      const std::vector<const bf16*> ws = rotating_weights(pool, rows_w, sh.k, l);
      const int nc = static_cast<int>(ws.size());
      const Mat x = random_mat(pool, Dt::BF16, m, sh.k, 1, 1.0f, l);
      const Mat y = mat(pool.get(static_cast<size_t>(m * sh.n) * 4), sh.ydt, m, sh.n);
      const double bytes = static_cast<double>(wbytes) + m * sh.k * 2.0 + m * sh.n * (sh.ydt == Dt::F32 ? 4.0 : 2.0);
      const std::string shape = std::string(sh.what) + " M=" + std::to_string(m) + " [" + std::to_string(rows_w) + "x" +
                                std::to_string(sh.k) + "]";
      if (sh.swiglu) {
        report(name, shape, time_us(s, [&](int i) { gemv_swiglu(x, ws[i % nc], sh.n, sh.k, y, l); }), bytes);
        continue;
      }
      // Both block configurations of the tensor-core kernel (gemv() picks one per shape).
      for (int warps : {8, 4})
        report(name, shape + " w" + std::to_string(warps),
               time_us(s, [&](int i) { gemv_with_warps(warps, x, ws[i % nc], sh.n, sh.k, nullptr, y, l); }), bytes);
    }
}

// Decode-batch GEMMs (M = 16, 32, 64) of the Llama-8B projections: the wide GEMMs (k-split, or
// SwiGLU for the stacked gate/up) against cuBLASLt (cuda::Gemm, autotuned on the first, untimed
// launch).
void bench_decode_gemms(const Launch& l, const char* filter) {
  const cudaStream_t s = l.stream;
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "SM count");
  const bool hopper = hopper_kernels_available();
  if (!hopper) std::printf("wide GEMMs: not available on this device\n");
  Gemm gemm;
  for (const Projection& sh : kLlama8BProjections)
    for (int m : {16, 32, 64}) {
      const bool lt = wanted(std::string("cublaslt ") + sh.what, filter);
      const bool wide = hopper && wanted(std::string("wide ") + sh.what, filter);
      if (!lt && !wide) continue;
      Pool pool;
      const size_t wbytes = static_cast<size_t>(sh.n * sh.k) * 2;
      const std::vector<const bf16*> w = rotating_weights(pool, sh.n, sh.k, l);
      const int nc = static_cast<int>(w.size());
      const Mat x = random_mat(pool, Dt::BF16, m, sh.k, 1, 1.0f, l);
      const Mat y = mat(pool.get(static_cast<size_t>(m * sh.n) * 2), Dt::BF16, m, sh.n);
      const double bytes = static_cast<double>(wbytes) + m * sh.k * 2.0 + m * sh.n * 2.0;
      const std::string shape = std::string(sh.what) + " M=" + std::to_string(m) + " [" + std::to_string(sh.n) + "x" +
                                std::to_string(sh.k) + "]";
      if (lt)
        report("cublaslt", shape, time_us(s, [&](int i) { gemm.run(x, w[i % nc], sh.n, sh.k, nullptr, y, s); }), bytes);
      if (!wide) continue;
      if (wide_gemm_ksplit_supported(x, w[0], sh.n, sh.k, y, sms))
        report("wide", shape + " k-split h" + std::to_string(wide_gemm_ksplit_half(sh.n, sms)),
               time_us(s, [&](int i) { wide_gemm_ksplit(x, w[i % nc], sh.n, sh.k, y, sms, l); }), bytes);
      Mat act = y;
      act.cols = sh.n / 2;
      if (wide_gemm_swiglu_supported(x, w[0], sh.n, sh.k, act, sms))
        report("wide", shape + " swiglu h" + std::to_string(wide_gemm_swiglu_half(sh.n, sms)),
               time_us(s, [&](int i) { wide_gemm_swiglu(x, w[i % nc], sh.n, sh.k, act, sms, l); }), bytes);
    }
}

// Pure weight streaming ("stream" lines, bench_stream.cu) over the Llama-8B projection sizes: the
// read rate a GEMM with each tile pattern could reach, and the fixed cost per launch.
void bench_stream(const Launch& l, const char* filter) {
  const cudaStream_t s = l.stream;
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "SM count");
  // INFERDESK_STREAM_GRID=<blocks>: the streaming kernels on fewer SMs than the device has (can a
  // kernel on half the SMs still stream at the full bandwidth?).
  if (const char* g = std::getenv("INFERDESK_STREAM_GRID"); g && std::atoi(g) > 0) sms = std::atoi(g);
  for (int v = 0; v < bench::stream_variants(); ++v) {
    const std::string name = std::string("stream ") + bench::stream_variant_name(v);
    if (!wanted(name, filter)) continue;
    for (const Projection& sh : kLlama8BProjections) {
      Pool pool;
      const size_t wbytes = static_cast<size_t>(sh.n * sh.k) * 2;
      const std::vector<const bf16*> w = rotating_weights(pool, sh.n, sh.k, l);
      const int nc = static_cast<int>(w.size());
      const Mat x = random_mat(pool, Dt::BF16, 64, sh.k, 1, 1.0f, l);
      auto* sink = static_cast<uint32_t*>(pool.get(16));
      if (!bench::stream_read(v, w[0], sh.n, sh.k * 2, x.data, sh.k * 2, sink, sms, l)) continue;
      report(name, std::string(sh.what) + " [" + std::to_string(sh.n) + "x" + std::to_string(sh.k) + "]",
             time_us(s,
                     [&](int i) { bench::stream_read(v, w[i % nc], sh.n, sh.k * 2, x.data, sh.k * 2, sink, sms, l); }),
             static_cast<double>(wbytes));
    }
  }
}

// The wide GEMMs' TMA weight stream alone ("stream tma" lines, bench_stream_tma.cu), W row-major
// as the GEMMs read it against the same bytes packed per block and stage, and against one 4-D box
// per stage with each row's panels adjacent: does DRAM locality, not the TMA, hold the GEMMs below
// the cp.async stream?
void bench_stream_tma(const Launch& l, const char* filter) {
  const cudaStream_t s = l.stream;
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "SM count");
  struct Form {
    const char* what;
    int rows, panels, splits;
  };
  // The GEMMs' tiles: k-split q|k|v 96 rows, o and down 64 rows (2 panels per stage, K over 2
  // blocks); SwiGLU gate/up 224 rows (one panel; two as a variant).
  const Form forms[] = {
      {"qkv", 96, 2, 2}, {"o", 64, 2, 2}, {"gate_up", 224, 1, 1}, {"gate_up", 224, 2, 1}, {"down", 64, 2, 2}};
  static const char* kModes[] = {"", " protocol", " protocol+x"};
  for (int mode = 0; mode < 3; ++mode)
    for (int packed : {0, 1, 2}) {
      static const char* kLayouts[] = {"strided", "packed", "adjacent"};
      const std::string name = std::string("stream tma ") + kLayouts[packed] + kModes[mode];
      if (!wanted(name, filter)) continue;
      for (const Form& f : forms) {
        const Projection* sh = nullptr;
        for (const Projection& p : kLlama8BProjections)
          if (std::string(p.what) == f.what) sh = &p;
        Pool pool;
        const size_t wbytes = static_cast<size_t>(sh->n * sh->k) * 2;
        const std::vector<const bf16*> w = rotating_weights(pool, sh->n, sh->k, l);
        const int nc = static_cast<int>(w.size());
        const Mat x = random_mat(pool, Dt::BF16, 64, sh->k, 1, 1.0f, l);
        auto* sink = static_cast<uint32_t*>(pool.get(16));
        auto run = [&](int i) {
          return bench::stream_tma_read(mode, f.rows, f.panels, f.splits, packed, w[i % nc], x.data, sh->n, sh->k, sink,
                                        sms, l);
        };
        if (!run(0)) continue;
        report(name, std::string(f.what) + " " + std::to_string(f.rows) + "x" + std::to_string(128 * f.panels) + "B",
               time_us(s, [&](int i) { run(i); }), static_cast<double>(wbytes));
      }
    }
}

void bench_rows(const Launch& l, const char* filter) {
  const cudaStream_t s = l.stream;
  const int64_t H = 4096, I = 14336;
  for (int64_t T : {1, 256, 4096}) {
    Pool pool;
    const std::string t = "T=" + std::to_string(T);
    const Mat x = random_mat(pool, Dt::BF16, T, H, 1, 1.0f, l);
    const Mat res = random_mat(pool, Dt::F32, T, H, 2, 1.0f, l);
    const Mat out = random_mat(pool, Dt::BF16, T, H, 3, 1.0f, l);
    const Mat w = random_mat(pool, Dt::BF16, 1, H, 4, 1.0f, l);
    const auto* wp = static_cast<const bf16*>(w.data);
    if (wanted("rms_norm", filter))
      report("rms_norm", t + " H=4096 bf16", time_us(s, [&](int) { rms_norm(x, wp, 1e-6f, out, l); }), T * H * 4.0);
    if (wanted("add_rms_norm", filter))
      report("add_rms_norm", t + " H=4096 res f32", time_us(s, [&](int) { add_rms_norm(res, x, wp, 1e-6f, out, l); }),
             T * H * 12.0);
    const Mat gu = random_mat(pool, Dt::BF16, T, 2 * I, 5, 1.0f, l);
    const Mat act = random_mat(pool, Dt::BF16, T, I, 6, 1.0f, l);
    Mat gate = gu, up = gu;
    gate.cols = up.cols = I;
    up.data = static_cast<bf16*>(gu.data) + I;
    if (wanted("silu_mul", filter))
      report("silu_mul", t + " I=14336", time_us(s, [&](int) { silu_mul(gate, up, act, l); }), T * I * 6.0);
    if (wanted("add_inplace", filter))
      report("add_inplace", t + " f32 += bf16", time_us(s, [&](int) { add_inplace(res, x, l); }), T * H * 10.0);
    std::vector<int32_t> ids(static_cast<size_t>(T));
    for (int64_t i = 0; i < T; ++i) ids[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7919) % 128256);
    auto* d_ids = static_cast<int32_t*>(pool.get(ids.size() * 4));
    check(cudaMemcpy(d_ids, ids.data(), ids.size() * 4, cudaMemcpyHostToDevice), "ids");
    if (wanted("embed_rows", filter)) {
      const Mat table = random_mat(pool, Dt::BF16, 128256, H, 7, 1.0f, l);
      report("embed_rows", t + " -> f32", time_us(s, [&](int) { embed_rows(table, d_ids, res, l); }), T * H * 6.0);
    }
  }
}

void bench_rope(const Launch& l, const char* filter) {
  const cudaStream_t s = l.stream;
  if (!wanted("rope_kv", filter)) return;
  const int32_t Hq = 32, Hk = 8, D = 128;
  for (int32_t T : {1, 64, 4096}) {
    Pool pool;
    const Mat qkv = random_mat(pool, Dt::BF16, T, int64_t{Hq + 2 * Hk} * D, 1, 1.0f, l);
    const Mat norm = random_mat(pool, Dt::BF16, 1, D, 2, 1.0f, l);
    RopeKvArgs a = rope_args(pool, static_cast<bf16*>(qkv.data), T, Hq, Hk, D);
    a.q_norm = a.k_norm = static_cast<const bf16*>(norm.data);
    // q, k read + written, v read, k and v written to the cache.
    const double bytes = static_cast<double>(T) * D * 2.0 * (2.0 * (Hq + Hk) + Hk + 2.0 * Hk);
    report("rope_kv", "T=" + std::to_string(T) + " Hq=32 Hk=8 D=128 qk-norm",
           time_us(s, [&](int) { qk_norm_rope_write_kv(a, l); }), bytes);
  }
}

// One decode layer of a dense model without attention, M rows: the kernels of a decode graph
// between two attention calls. Weights rotate over copies (beyond the L2) as in bench_gemv.
struct LayerShape {
  const char* what;
  int64_t hidden, inter;
  int32_t q_heads, kv_heads, head_dim;
};

void bench_layer(const Launch& l, const char* filter) {
  const cudaStream_t s = l.stream;
  if (!wanted("layer", filter)) return;
  const LayerShape shapes[] = {{"llama-8B", 4096, 14336, 32, 8, 128}, {"llama-1B", 2048, 8192, 32, 8, 64}};
  for (const LayerShape& sh : shapes)
    for (int m : {1, 8}) {
      Pool pool;
      const int64_t H = sh.hidden, I = sh.inter, D = sh.head_dim;
      const int64_t qkv_n = int64_t{sh.q_heads + 2 * sh.kv_heads} * D, o_k = int64_t{sh.q_heads} * D;
      struct Weights {
        const bf16 *qkv, *o, *gu, *down, *n1, *n2;
      };
      const size_t wbytes = static_cast<size_t>((qkv_n + o_k + 2 * I) * H + H * I) * 2;
      const int nc = copies_for(wbytes);
      std::vector<Weights> ws;
      auto w = [&](int64_t r, int64_t c, uint64_t seed) {
        return static_cast<const bf16*>(random_mat(pool, Dt::BF16, r, c, seed, 0.02f, l).data);
      };
      for (int c = 0; c < nc; ++c)
        ws.push_back({w(qkv_n, H, 10 + c), w(H, o_k, 20 + c), w(2 * I, H, 30 + c), w(H, I, 40 + c), w(1, H, 50 + c),
                      w(1, H, 60 + c)});
      const Mat res = random_mat(pool, Dt::F32, m, H, 1, 1.0f, l);
      const Mat h = random_mat(pool, Dt::BF16, m, H, 2, 1.0f, l);
      const Mat y = random_mat(pool, Dt::BF16, m, H, 3, 0.01f, l);
      const Mat qkv = random_mat(pool, Dt::BF16, m, qkv_n, 4, 1.0f, l);
      const Mat act = random_mat(pool, Dt::BF16, m, I, 5, 1.0f, l);
      Mat attn = qkv;  // the q columns stand in for the attention output
      attn.cols = o_k;
      const RopeKvArgs a = rope_args(pool, static_cast<bf16*>(qkv.data), m, sh.q_heads, sh.kv_heads,
                                     static_cast<int32_t>(D));
      Launch ll = l;  // the layer's launches: PDL on, then off
      const auto layer = [&](int i) {
        const Weights& wt = ws[static_cast<size_t>(i % nc)];
        add_rms_norm(res, y, wt.n1, 1e-5f, h, ll);
        gemv(h, wt.qkv, qkv_n, H, nullptr, qkv, ll);
        qk_norm_rope_write_kv(a, ll);
        gemv(attn, wt.o, H, o_k, nullptr, y, ll);
        add_rms_norm(res, y, wt.n2, 1e-5f, h, ll);
        gemv_swiglu(h, wt.gu, I, H, act, ll);
        gemv(act, wt.down, H, I, nullptr, y, ll);
      };
      for (bool pdl : {true, false}) {
        ll.pdl = pdl && l.pdl;
        const double us = time_us(s, layer);
        report("layer", std::string(sh.what) + " M=" + std::to_string(m) + " 7 kernels" + (ll.pdl ? " pdl" : " no-pdl"),
               us, static_cast<double>(wbytes));
      }
    }
}

}  // namespace

int main(int argc, char** argv) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::fprintf(stderr, "bench_gpu_kernels: no CUDA GPU\n");
    return 1;
  }
  const char* filter = nullptr;
  bool pdl = true;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--no-pdl")
      pdl = false;
    else
      filter = argv[i];
  }
  cudaDeviceProp p{};
  cudaGetDeviceProperties(&p, 0);
  std::printf("%s, %d SMs; %d launches per graph, median of %d replays; %% of %.0f GB/s; PDL %s\n", p.name,
              p.multiProcessorCount, kIters, kReps, kPeakGBs, pdl && pdl_supported() ? "on" : "off");
  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  const Launch l{s, pdl};
  bench_gemv(l, filter);
  bench_decode_gemms(l, filter);
  bench_stream(l, filter);
  bench_stream_tma(l, filter);
  bench_rows(l, filter);
  bench_rope(l, filter);
  bench_layer(l, filter);
  bench_fp8(l, filter);
  cudaStreamDestroy(s);
  return 0;
}
