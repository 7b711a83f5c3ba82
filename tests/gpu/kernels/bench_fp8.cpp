// FP8 lines of bench_gpu_kernels ("fp8_..."): the Llama-8B projections with E4M3 weights (1 byte a
// weight; per-channel scales unless the line says block) at decode and prefill row counts. Weights
// rotate over copies beyond the L2, as in the BF16 lines, so every launch streams them from DRAM.
#include "tests/gpu/kernels/bench_fp8.h"

#include <string>
#include <vector>

#include "cuda/backend/context.h"
#include "cuda/backend/fp8_gemm.h"
#include "cuda/backend/gemm.h"
#include "cuda/kernels/elementwise.h"
#include "cuda/kernels/fp8_linear.h"
#include "cuda/kernels/rope_kv.h"
#include "cuda/kernels/sm90a/fp8_wide_gemm.h"
#include "cuda/kernels/sm90a/wide_gemm.h"
#include "tests/gpu/kernels/bench_util.h"

namespace inferdesk::benchutil {
namespace {

using namespace inferdesk::cuda;

struct Proj {
  const char* what;
  int64_t n, k;
  bool swiglu;  // n = 2 I stacked gate/up
};
constexpr Proj kProj[] = {{"qkv", 6144, 4096, false},
                          {"o", 4096, 4096, false},
                          {"gate_up", 28672, 4096, true},
                          {"down", 4096, 14336, false}};

// Copies of an FP8 [n, k] weight with per-channel or block scales (copies 0: copies_for).
std::vector<Fp8Weight> fp8_weights(Pool& pool, int64_t n, int64_t k, bool block, const Launch& l, int copies = 0) {
  std::vector<Fp8Weight> ws;
  const int nc = copies > 0 ? copies : copies_for(static_cast<size_t>(n * k));
  for (int c = 0; c < nc; ++c) {
    Fp8Weight w;
    auto* data = static_cast<uint8_t*>(pool.get(static_cast<size_t>(n * k)));
    fill_random_fp8(data, n, k, k, 10 + c, 0.5f, l);
    w.data = data;
    w.n = n;
    w.k = k;
    w.gran = block ? Fp8Gran::Block : Fp8Gran::Channel;
    w.act = block ? Fp8Act::DynamicGroup : Fp8Act::DynamicToken;
    w.scale_cols = block ? (k + 127) / 128 : 0;
    const int64_t rows = block ? (n + 127) / 128 : n, cols = block ? w.scale_cols : 1;
    w.scales = static_cast<const float*>(random_mat(pool, Dt::F32, rows, cols, 20 + c, 0.01f, l).data);
    ws.push_back(w);
  }
  return ws;
}

int device_sms() {
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  return sms;
}

std::string shape_of(const Proj& p, int m, const char* tail) {
  return std::string(p.what) + " M=" + std::to_string(m) + " [" + std::to_string(p.n) + "x" + std::to_string(p.k) +
         "]" + tail;
}

struct GemvShape {
  Fp8GemvConfig cfg;
  std::string tail;  // of the line's name
};

// A projection's operands at M = m: the weight copies, BF16 x [m, k] and y [m, out].
struct Operands {
  Pool pool;
  std::vector<Fp8Weight> ws;
  int nc;
  int64_t out;
  Mat x, y;
  Operands(const Proj& p, int m, bool block, const Launch& l)
      : ws(fp8_weights(pool, p.n, p.k, block, l)),
        nc(static_cast<int>(ws.size())),
        out(p.swiglu ? p.n / 2 : p.n),
        x(random_mat(pool, Dt::BF16, m, p.k, 1, 1.0f, l)),
        y(mat(pool.get(static_cast<size_t>(m * out) * 2), Dt::BF16, m, out)) {}
};

// Times the GEMV of `p` at M = m once for each block shape.
void time_gemv(const Launch& l, const Proj& p, int m, bool block, const char* group, const std::vector<GemvShape>& shapes) {
  Operands o(p, m, block, l);
  const double bytes = static_cast<double>(p.n * p.k) + m * p.k * 2.0 + m * o.out * 2.0;
  for (const GemvShape& sh : shapes) {
    const double us = time_us(l.stream, [&](int i) {
      const Fp8Weight& w = o.ws[i % o.nc];
      p.swiglu ? fp8_gemv_swiglu(o.x, w, o.y, l, sh.cfg) : fp8_gemv(o.x, w, nullptr, o.y, l, sh.cfg);
    });
    report(group, shape_of(p, m, sh.tail.c_str()), us, bytes);
  }
}

void bench_gemv(const Launch& l, const char* filter) {
  if (!wanted("fp8_gemv", filter)) return;
  for (const Proj& p : kProj)
    for (bool block : {false, true})
      for (int m : {1, 2, 4, 8}) {
        if (block && m > 1) continue;
        time_gemv(l, p, m, block, p.swiglu ? "fp8_gemv_swiglu" : "fp8_gemv", {{{}, block ? " block" : ""}});
      }
}

// The GEMV's block shapes side by side: warps per block and steps a batch (block weights at M = 1).
void bench_gemv_configs(const Launch& l, const char* filter) {
  if (!wanted("fp8_gemv_cfg", filter)) return;
  for (bool block : {false, true}) {
    std::vector<GemvShape> shapes;
    for (int w : {8, 4})
      for (int u : {1, 2})
        shapes.push_back({{w, u}, " w" + std::to_string(w) + "u" + std::to_string(u) + (block ? " block" : "")});
    for (const Proj& p : kProj)
      for (int m : {1, 4, 8})
        if (!block || m == 1) time_gemv(l, p, m, block, "fp8_gemv_cfg", shapes);
  }
}

// The wide GEMMs (9-64 rows) alone and with the activation quantization before them.
void bench_wide(const Launch& l, const char* filter) {
  if (!wanted("fp8_wide", filter) || !hopper_kernels_available()) return;
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "SM count");
  for (const Proj& p : kProj)
    for (bool block : {false, true})
      for (int m : {16, 32, 64}) {
        Operands o(p, m, block, l);
        const std::vector<Fp8Weight>& ws = o.ws;
        const int nc = o.nc;
        const Mat &x = o.x, &y = o.y;
        const int64_t out = o.out;
        const Fp8X q = fp8_x_at(o.pool.get(static_cast<size_t>(fp8_x_bytes(m, p.k, ws[0]))), m, p.k, ws[0]);
        fp8_quantize(x, ws[0], q, l);
        if (!fp8_wide_supported(q, ws[0], y, p.swiglu, sms)) continue;
        const Fp8WideTile t = fp8_wide_tile(p.n, p.k, p.swiglu, block, sms);
        const std::string tile = " bn" + std::to_string(t.rows) + " ks" + std::to_string(t.splits) +
                                 (t.two_per_sm ? " x2" : "") + (block ? " block" : "");
        const double bytes = static_cast<double>(p.n * p.k) + m * p.k + m * out * 2.0;
        auto gemm = [&](int i) {
          p.swiglu ? fp8_wide_swiglu(q, ws[i % nc], y, sms, l) : fp8_wide_gemm(q, ws[i % nc], nullptr, y, sms, l);
        };
        report("fp8_wide", shape_of(p, m, tile.c_str()), time_us(l.stream, gemm), bytes);
        report("fp8_wide+q", shape_of(p, m, tile.c_str()),
               time_us(l.stream,
                       [&](int i) {
                         fp8_quantize(x, ws[i % nc], q, l);
                         gemm(i);
                       }),
               bytes);
      }
}

// cuBLASLt FP8 (with the activation quantization) against cuBLASLt BF16 at prefill row counts;
// the shape column carries TFLOP/s.
void bench_cublaslt(const char* filter) {
  if (!wanted("fp8_cublaslt", filter)) return;
  CudaBackendOptions o;
  CudaContext ctx(o);
  Fp8Gemm fp8(ctx);
  Gemm bf16gemm;
  const Launch& l = ctx.launch;
  for (const Proj& p : kProj)
    for (int m : {64, 256, 1024, 4096, 16384})
      for (int kind = 0; kind < 3; ++kind) {  // FP8 channel, FP8 block, BF16
        Pool pool;
        const Mat x = random_mat(pool, Dt::BF16, m, p.k, 1, 1.0f, l);
        const Mat y = mat(pool.get(static_cast<size_t>(m * p.n) * 2), Dt::BF16, m, p.n);
        const double flops = 2.0 * m * p.n * p.k;
        std::function<void(int)> run;
        std::vector<Fp8Weight> ws;
        std::vector<const bf16*> wb;
        Fp8X q;
        if (kind < 2) {
          ws = fp8_weights(pool, p.n, p.k, kind == 1, l);
          q = fp8_x_at(pool.get(static_cast<size_t>(fp8_x_bytes(m, p.k, ws[0]))), m, p.k, ws[0]);
          fp8_quantize(x, ws[0], q, l);
          if (!fp8.run(q, ws[0], nullptr, y)) {
            std::printf("fp8_cublaslt   %s: no algorithm\n", shape_of(p, m, kind ? " block" : "").c_str());
            continue;
          }
          const int nc = static_cast<int>(ws.size());
          run = [&, nc](int i) {
            fp8_quantize(x, ws[i % nc], q, l);
            fp8.run(q, ws[i % nc], nullptr, y);
          };
        } else {
          const int nc = copies_for(static_cast<size_t>(p.n * p.k) * 2);
          for (int c = 0; c < nc; ++c)
            wb.push_back(static_cast<const bf16*>(random_mat(pool, Dt::BF16, p.n, p.k, 10 + c, 0.02f, l).data));
          run = [&, nc](int i) { bf16gemm.run(x, wb[i % nc], p.n, p.k, nullptr, y, ctx.stream, false); };
        }
        const double us = time_us(ctx.stream, run);
        const std::string tail = std::string(kind == 0   ? " fp8"
                                             : kind == 1 ? " fp8 block"
                                                         : " bf16") +
                                 " " + std::to_string(static_cast<int>(flops / (us * 1e-6) / 1e12)) + " TF/s";
        report(kind < 2 ? "fp8_cublaslt" : "bf16_cublaslt", shape_of(p, m, tail.c_str()), us,
               static_cast<double>(p.n * p.k) * (kind < 2 ? 1 : 2));
      }
}

// One Llama-8B decode layer without attention on the FP8 GEMVs (rope and the KV write as a
// kernel of their own: the BF16 layer fuses them into the q|k|v GEMV).
void bench_layer(const Launch& l, const char* filter) {
  if (!wanted("fp8_layer", filter)) return;
  constexpr int64_t H = 4096, I = 14336, QKV = 6144;
  for (int m : {1, 8}) {
    Pool pool;
    const int nc = copies_for(static_cast<size_t>((QKV + H + 2 * I) * H + H * I));
    const std::vector<Fp8Weight> qkv = fp8_weights(pool, QKV, H, false, l, nc),
                                 o = fp8_weights(pool, H, H, false, l, nc);
    const std::vector<Fp8Weight> gu = fp8_weights(pool, 2 * I, H, false, l, nc),
                                 down = fp8_weights(pool, H, I, false, l, nc);
    const Mat res = random_mat(pool, Dt::F32, m, H, 1, 1.0f, l), h = random_mat(pool, Dt::BF16, m, H, 2, 1.0f, l);
    const Mat y = random_mat(pool, Dt::BF16, m, H, 3, 0.01f, l), qkvm = random_mat(pool, Dt::BF16, m, QKV, 4, 1.0f, l);
    const Mat act = random_mat(pool, Dt::BF16, m, I, 5, 1.0f, l);
    const auto* n1 = static_cast<const bf16*>(random_mat(pool, Dt::BF16, 1, H, 6, 1.0f, l).data);
    Mat attn = qkvm;
    attn.cols = H;
    const RopeKvArgs a = rope_args(pool, static_cast<bf16*>(qkvm.data), m, 32, 8, 128);
    for (bool policy : {false, true}) {
      // The engine's block shapes (fp8_gemv_config) against the kernel's default one.
      const int sms = policy ? device_sms() : 0;
      const auto cfg = [&](const Fp8Weight& w, bool sw) { return policy ? fp8_gemv_config(w, sw, sms) : Fp8GemvConfig{}; };
      const double us = time_us(l.stream, [&](int i) {
        const int c = i % nc;
        add_rms_norm(res, y, n1, 1e-5f, h, l);
        fp8_gemv(h, qkv[c], nullptr, qkvm, l, cfg(qkv[c], false));
        qk_norm_rope_write_kv(a, l);
        fp8_gemv(attn, o[c], nullptr, y, l, cfg(o[c], false));
        add_rms_norm(res, y, n1, 1e-5f, h, l);
        fp8_gemv_swiglu(h, gu[c], act, l, cfg(gu[c], true));
        fp8_gemv(act, down[c], nullptr, y, l, cfg(down[c], false));
      });
      report("fp8_layer", "llama-8B M=" + std::to_string(m) + " 7 kernels" + (policy ? " engine shapes" : " w8u1"), us,
             static_cast<double>((QKV + H + 2 * I) * H + H * I));
    }
  }
}

}  // namespace

void bench_fp8(const Launch& l, const char* filter) {
  bench_gemv(l, filter);
  bench_gemv_configs(l, filter);
  bench_wide(l, filter);
  bench_cublaslt(filter);
  bench_layer(l, filter);
}

}  // namespace inferdesk::benchutil
