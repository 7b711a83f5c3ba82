// bench_cpu_backend: throughput of the CPU backend's hot paths (not a test; run by hand).
//
//   bench_cpu_backend [gemv|gemm|sweep|attention|model|all] [--threads N] [--isa auto|avx512|avx2|scalar]
//                     [--cpu-time]
//
// gemv:  BF16 weights [8192 out, 2048 in] x T rows (T = 1..8), weight-stream GB/s (decimal).
//        Eight distinct weight matrices (256 MiB) are cycled so every call streams from DRAM;
//        once from plain host memory (4 KiB pages, like an mmapped file), once from alloc()
//        (2 MiB pages).
// gemm:  256 x 2048 activations times a BF16 [8192, 2048] weight: GFLOP/s.
// sweep: GFLOP/s of the same linear for T = 1..256.
// attention: one layer of paged attention (decode at 4096 context, 256-row prefill chunks; the
//        16 MiB of one layer's K/V may stay in the last-level cache), then decode at 4096 context
//        over 16 layers (256 MiB of K/V, read from DRAM): ms per layer and K/V GB/s.
// model: a Llama-3.2-1B-shaped stack (hidden 2048, 32/8 heads of 64, inter 8192, 16 layers,
//        vocab 128256, dummy BF16 weights): prefill of 256 tokens and decode steps, in tok/s.
// Every figure is the median of several repetitions.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/backend/cpu/cpu_backend.h"

using namespace inferdesk;

namespace {

struct Timing {
  double median = 0;
  double best = 0;
};

// The machine is shared, so both the median and the best repetition are reported: the best is
// what the code can do when it has the cores to itself.
// --cpu-time: process CPU time instead of wall time. With --threads 1 that is the time the code
// actually ran, which keeps kernel comparisons meaningful on a machine other jobs share.
bool g_cpu_time = false;

double now_seconds() {
  if (!g_cpu_time) return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

Timing time_it(int reps, const std::function<void()>& fn) {
  fn();  // warm-up
  std::vector<double> s;
  for (int i = 0; i < reps; ++i) {
    const double t0 = now_seconds();
    fn();
    s.push_back(now_seconds() - t0);
  }
  std::sort(s.begin(), s.end());
  return {s[s.size() / 2], s.front()};
}

// file_like: the weights live in plain malloc'd host memory handed over with load_weight (4 KiB
// pages, as an mmapped safetensors file gives); otherwise they come from alloc() (huge pages).
void bench_gemv(Backend& be, bool file_like) {
  const int64_t K = 2048, O = 8192;
  std::vector<Buffer> ws;
  std::vector<std::vector<uint16_t>> host(8);
  for (int i = 0; i < 8; ++i) {
    Buffer b = be.alloc(DType::BF16, O, K);
    be.fill_random(b.tensor(), 100 + i, 0.05f);
    if (file_like) {
      host[i].resize(static_cast<size_t>(O * K));
      std::memcpy(host[i].data(), b.tensor().data, host[i].size() * 2);
      HostTensor h;
      h.name = "bench.w" + std::to_string(i);
      h.dtype = DType::BF16;
      h.shape = {O, K};
      h.data = reinterpret_cast<const std::byte*>(host[i].data());
      h.nbytes = host[i].size() * 2;
      b = be.load_weight(h, O, K);
    }
    ws.push_back(std::move(b));
  }
  Buffer x = be.alloc(DType::F32, 8, K), out = be.alloc(DType::F32, 8, O);
  be.fill_random(x.tensor(), 1, 1.0f);
  for (int64_t T : {1, 2, 4, 8}) {
    Timing s = time_it(25, [&] {
      for (auto& w : ws) be.linear(x.tensor().row_slice(0, T), w.tensor(), nullptr, out.tensor().row_slice(0, T));
    });
    const double bytes = 8.0 * O * K * 2;
    std::printf("{\"bench\": \"gemv_bf16\", \"pages\": \"%s\", \"K\": %ld, \"O\": %ld, \"T\": %ld, "
                "\"gbps_median\": %.2f, \"gbps_best\": %.2f, \"ms_per_call_median\": %.3f}\n",
                file_like ? "4k" : "huge", (long)K, (long)O, (long)T, bytes / s.median / 1e9, bytes / s.best / 1e9,
                s.median / 8 * 1e3);
  }
}

void bench_gemm(Backend& be) {
  const int64_t T = 256, K = 2048, O = 8192;
  Buffer w = be.alloc(DType::BF16, O, K);
  be.fill_random(w.tensor(), 7, 0.05f);
  Buffer x = be.alloc(DType::F32, T, K), out = be.alloc(DType::F32, T, O);
  be.fill_random(x.tensor(), 1, 1.0f);
  Timing s = time_it(9, [&] { be.linear(x.tensor(), w.tensor(), nullptr, out.tensor()); });
  const double flop = 2.0 * T * K * O;
  std::printf("{\"bench\": \"gemm_bf16\", \"T\": %ld, \"K\": %ld, \"O\": %ld, "
              "\"gflops_median\": %.1f, \"gflops_best\": %.1f, \"ms_median\": %.2f}\n",
              (long)T, (long)K, (long)O, flop / s.median / 1e9, flop / s.best / 1e9, s.median * 1e3);
}

// GFLOP/s of linear over a range of row counts.
void bench_sweep(Backend& be) {
  const int64_t K = 2048, O = 8192;
  Buffer w = be.alloc(DType::BF16, O, K);
  be.fill_random(w.tensor(), 7, 0.05f);
  Buffer x = be.alloc(DType::F32, 256, K), out = be.alloc(DType::F32, 256, O);
  be.fill_random(x.tensor(), 1, 1.0f);
  for (int64_t T : {1, 2, 4, 8, 16, 32, 64, 128, 256}) {
    Timing s = time_it(5, [&] {
      be.linear(x.tensor().row_slice(0, T), w.tensor(), nullptr, out.tensor().row_slice(0, T));
    });
    std::printf("{\"bench\": \"sweep_bf16\", \"T\": %ld, \"K\": %ld, \"O\": %ld, "
                "\"gflops_median\": %.1f, \"gflops_best\": %.1f}\n",
                (long)T, (long)K, (long)O, 2.0 * T * K * O / s.median / 1e9, 2.0 * T * K * O / s.best / 1e9);
  }
}

// A step of one sequence that writes slots 0 .. ctx-1: the cache's first ctx / bs blocks.
StepInput fill_step(int32_t ctx, int32_t bs) {
  StepInput s;
  s.block_size = bs;
  for (int32_t t = 0; t < ctx; ++t) s.slot_mapping.push_back(t);
  s.token_ids.assign(static_cast<size_t>(ctx), 1);
  s.positions = s.slot_mapping;
  return s;
}

// The last `rows` tokens of one sequence of ctx tokens whose block table is `table`.
StepInput query_step(int32_t ctx, int32_t rows, int32_t bs, const std::vector<int32_t>& table) {
  StepInput q;
  q.block_size = bs;
  for (int32_t t = 0; t < rows; ++t) {
    q.token_ids.push_back(1);
    q.positions.push_back(ctx - rows + t);
    q.slot_mapping.push_back(ctx - rows + t);
  }
  q.seqs.push_back(StepSeq{0, rows, ctx, 0, static_cast<int32_t>(table.size())});
  q.block_tables = table;
  return q;
}

// Paged attention of one layer (32 query heads, 8 kv heads of 64): one decode row at a long
// context, and a 256-row prefill chunk.
void bench_attention(Backend& be) {
  const int32_t Hq = 32, Hk = 8, D = 64, bs = 16;
  for (auto [ctx, T] : {std::pair<int32_t, int32_t>{4096, 1}, {256, 256}, {4096, 256}}) {
    be.init_kv_cache(KvCacheShape{1, ctx / bs, bs, Hk, D});
    be.begin_step(fill_step(ctx, bs));
    Buffer kv = be.alloc(DType::F32, ctx, Hk * D);
    be.fill_random(kv.tensor(), 3, 1.0f);
    be.write_kv(0, kv.tensor(), kv.tensor());
    std::vector<int32_t> table;
    for (int32_t b = 0; b < ctx / bs; ++b) table.push_back(b);
    be.begin_step(query_step(ctx, T, bs, table));
    Buffer qb = be.alloc(DType::F32, T, Hq * D), out = be.alloc(DType::F32, T, Hq * D);
    be.fill_random(qb.tensor(), 4, 1.0f);
    AttentionParams p{Hq, Hk, D, 0.125f, 0};
    Timing t = time_it(5, [&] { be.attention(0, qb.tensor(), p, out.tensor()); });
    std::printf("{\"bench\": \"attention\", \"context\": %d, \"rows\": %d, \"ms_median\": %.2f, "
                "\"ms_best\": %.2f}\n",
                ctx, T, t.median * 1e3, t.best * 1e3);
  }
}

// Decode at context 4096 over 16 layers (as a model step does), so the K/V read (256 MiB) cannot
// sit in the last-level cache between calls: ms per layer and the K/V read rate.
// shuffled: the blocks are scattered over the pool (as after many requests came and went).
void bench_attention_decode_layers(Backend& be, bool shuffled) {
  const int32_t Hq = 32, Hk = 8, D = 64, bs = 16, ctx = 4096, L = 16;
  be.init_kv_cache(KvCacheShape{L, ctx / bs, bs, Hk, D});
  be.begin_step(fill_step(ctx, bs));
  Buffer kv = be.alloc(DType::F32, ctx, Hk * D);
  for (int32_t l = 0; l < L; ++l) {
    be.fill_random(kv.tensor(), 10 + l, 1.0f);
    be.write_kv(l, kv.tensor(), kv.tensor());
  }
  std::vector<int32_t> table;
  for (int32_t b = 0; b < ctx / bs; ++b)  // 97 is odd: b * 97 mod 256 is a permutation
    table.push_back(shuffled ? b * 97 % (ctx / bs) : b);
  be.begin_step(query_step(ctx, 1, bs, table));
  Buffer qb = be.alloc(DType::F32, 1, Hq * D), out = be.alloc(DType::F32, 1, Hq * D);
  be.fill_random(qb.tensor(), 4, 1.0f);
  AttentionParams p{Hq, Hk, D, 0.125f, 0};
  Timing t = time_it(9, [&] {
    for (int32_t l = 0; l < L; ++l) be.attention(l, qb.tensor(), p, out.tensor());
  });
  const double bytes = 2.0 * L * ctx * Hk * D * 4;
  std::printf("{\"bench\": \"attention_decode_layers\", \"blocks\": \"%s\", \"context\": %d, "
              "\"layers\": %d, \"ms_per_layer_median\": %.3f, \"ms_per_layer_best\": %.3f, "
              "\"kv_gbps_median\": %.1f, \"kv_gbps_best\": %.1f}\n",
              shuffled ? "shuffled" : "consecutive", ctx, L, t.median * 1e3 / L, t.best * 1e3 / L,
              bytes / t.median / 1e9, bytes / t.best / 1e9);
}

struct Layer {
  Buffer ln1, qkv, o, ln2, gate, up, down;
};

struct Model {
  std::vector<Layer> layers;
  Buffer embed, norm;
};

Model dummy_model(Backend& be, int64_t H, int64_t I, int64_t L, int64_t V, int64_t qkv_rows, int64_t q_cols) {
  Model m;
  m.layers.resize(static_cast<size_t>(L));
  uint64_t seed = 1;
  auto weight = [&](int64_t r, int64_t c, float scale) {
    Buffer b = be.alloc(DType::BF16, r, c);
    be.fill_random(b.tensor(), seed++, scale);
    return b;
  };
  for (auto& l : m.layers) {
    l.ln1 = weight(1, H, 1.0f);
    l.qkv = weight(qkv_rows, H, 0.03f);
    l.o = weight(H, q_cols, 0.03f);
    l.ln2 = weight(1, H, 1.0f);
    l.gate = weight(I, H, 0.03f);
    l.up = weight(I, H, 0.03f);
    l.down = weight(H, I, 0.015f);
  }
  m.embed = weight(V, H, 0.05f);
  m.norm = weight(1, H, 1.0f);
  return m;
}

void bench_model(Backend& be) {
  const int64_t H = 2048, I = 8192, L = 16, V = 128256, Hq = 32, Hk = 8, D = 64;
  const int64_t qkv_rows = (Hq + 2 * Hk) * D;
  Model model = dummy_model(be, H, I, L, V, qkv_rows, Hq * D);
  std::vector<Layer>& layers = model.layers;
  Buffer& embed = model.embed;
  Buffer& norm = model.norm;
  const int block = 16, max_ctx = 512;
  be.init_kv_cache(
      KvCacheShape{static_cast<int32_t>(L), max_ctx / block, block, static_cast<int32_t>(Hk), static_cast<int32_t>(D)});
  RopeConfig rope;
  rope.rotary_dim = static_cast<int32_t>(D);
  for (int64_t d = 0; d < D / 2; ++d) rope.inv_freq.push_back(std::pow(500000.0f, -2.0f * d / D));
  AttentionParams ap{static_cast<int32_t>(Hq), static_cast<int32_t>(Hk), static_cast<int32_t>(D), 1.0f / 8.0f, 0};

  // Seconds spent per op kind (ops are synchronous on the CPU backend), for the breakdown.
  std::map<std::string, double> op_time;
  auto timed = [&](const char* name, const std::function<void()>& fn) {
    const double t0 = now_seconds();
    fn();
    op_time[name] += now_seconds() - t0;
  };
  auto forward = [&](int64_t start, int64_t T) {
    StepInput s;
    s.block_size = block;
    for (int64_t t = 0; t < T; ++t) {
      s.token_ids.push_back(static_cast<int32_t>((start + t) * 7919 % V));
      s.positions.push_back(static_cast<int32_t>(start + t));
      s.slot_mapping.push_back(static_cast<int32_t>(start + t));
    }
    s.seqs.push_back(StepSeq{0, static_cast<int32_t>(T), static_cast<int32_t>(start + T), 0, max_ctx / block});
    for (int b = 0; b < max_ctx / block; ++b) s.block_tables.push_back(b);
    s.logit_rows.push_back(static_cast<int32_t>(T - 1));
    be.begin_step(s);
    Buffer x = be.alloc(DType::F32, T, H), h = be.alloc(DType::F32, T, H), qkv = be.alloc(DType::F32, T, qkv_rows),
           att = be.alloc(DType::F32, T, Hq * D), g = be.alloc(DType::F32, T, I), u = be.alloc(DType::F32, T, I),
           last = be.alloc(DType::F32, 1, H), logits = be.alloc(DType::F32, 1, V);
    timed("embed", [&] { be.embed(embed.tensor(), x.tensor()); });
    timed("rms_norm", [&] { be.rms_norm(x.tensor(), layers[0].ln1.tensor(), 1e-5f, h.tensor()); });
    for (int64_t li = 0; li < L; ++li) {
      Layer& l = layers[li];
      timed("linear", [&] { be.linear(h.tensor(), l.qkv.tensor(), nullptr, qkv.tensor()); });
      Tensor q = qkv.tensor().col_slice(0, Hq * D), k = qkv.tensor().col_slice(Hq * D, Hk * D),
             v = qkv.tensor().col_slice((Hq + Hk) * D, Hk * D);
      timed("rope",
            [&] { be.rope(q, k, static_cast<int32_t>(Hq), static_cast<int32_t>(Hk), static_cast<int32_t>(D), rope); });
      timed("write_kv", [&] { be.write_kv(static_cast<int32_t>(li), k, v); });
      timed("attention", [&] { be.attention(static_cast<int32_t>(li), q, ap, att.tensor()); });
      timed("linear", [&] { be.linear(att.tensor(), l.o.tensor(), nullptr, h.tensor()); });
      timed("add_rms_norm", [&] { be.add_rms_norm(x.tensor(), h.tensor(), l.ln2.tensor(), 1e-5f, h.tensor()); });
      timed("linear", [&] { be.linear(h.tensor(), l.gate.tensor(), nullptr, g.tensor()); });
      timed("linear", [&] { be.linear(h.tensor(), l.up.tensor(), nullptr, u.tensor()); });
      timed("silu_mul", [&] { be.silu_mul(g.tensor(), u.tensor(), g.tensor()); });
      timed("linear", [&] { be.linear(g.tensor(), l.down.tensor(), nullptr, h.tensor()); });
      const Tensor& next_ln = li + 1 < L ? layers[li + 1].ln1.tensor() : norm.tensor();
      timed("add_rms_norm", [&] { be.add_rms_norm(x.tensor(), h.tensor(), next_ln, 1e-5f, h.tensor()); });
    }
    timed("gather_rows", [&] { be.gather_rows(h.tensor(), last.tensor()); });
    be.linear(last.tensor(), embed.tensor(), nullptr, logits.tensor());  // tied embeddings
    std::vector<float> host(static_cast<size_t>(V));
    be.to_host(logits.tensor(), host.data());
    if (!std::isfinite(host[0])) std::printf("non-finite logits!\n");
  };
  const int64_t P = 256;
  Timing prefill = time_it(3, [&] { forward(0, P); });
  std::printf("{\"bench\": \"model_prefill\", \"shape\": \"llama-3.2-1b\", \"tokens\": %ld, "
              "\"seconds_median\": %.3f, \"tok_per_s_median\": %.1f, \"tok_per_s_best\": %.1f}\n",
              (long)P, prefill.median, P / prefill.median, P / prefill.best);
  auto dump = [&](const char* phase, double runs) {
    std::printf("{\"bench\": \"op_breakdown\", \"phase\": \"%s\"", phase);
    for (auto& [k, v] : op_time) std::printf(", \"%s_ms\": %.1f", k.c_str(), v / runs * 1e3);
    std::printf("}\n");
    op_time.clear();
  };
  dump("prefill", 4);
  int64_t pos = P;
  Timing decode = time_it(7, [&] { forward(P + (pos++ % 64), 1); });
  std::printf("{\"bench\": \"model_decode\", \"shape\": \"llama-3.2-1b\", \"context\": %ld, "
              "\"ms_per_token_median\": %.1f, \"tok_per_s_median\": %.2f, \"tok_per_s_best\": %.2f}\n",
              (long)P, decode.median * 1e3, 1.0 / decode.median, 1.0 / decode.best);
  dump("decode", 8);
}

}  // namespace

int main(int argc, char** argv) {
  std::string what = "all";
  CpuBackendOptions o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      o.num_threads = std::atoi(argv[++i]);
    } else if (a == "--isa" && i + 1 < argc) {
      std::string v = argv[++i];
      o.isa = v == "avx512"   ? CpuIsa::Avx512
              : v == "avx2"   ? CpuIsa::Avx2
              : v == "scalar" ? CpuIsa::Scalar
                              : CpuIsa::Auto;
    } else if (a == "--cpu-time") {
      g_cpu_time = true;
    } else {
      what = a;
    }
  }
  auto be = make_cpu_backend(o);
  std::printf("{\"backend\": \"%s\"}\n", be->name().c_str());
  if (what == "gemv" || what == "all") {
    bench_gemv(*be, true);
    bench_gemv(*be, false);
  }
  if (what == "gemm" || what == "all") bench_gemm(*be);
  if (what == "model" || what == "all") bench_model(*be);
  if (what == "sweep") bench_sweep(*be);
  if (what == "attention") {
    bench_attention(*be);
    bench_attention_decode_layers(*be, false);
    bench_attention_decode_layers(*be, true);
  }
  return 0;
}
