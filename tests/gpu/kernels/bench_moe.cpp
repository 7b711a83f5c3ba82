// The MoE expert kernels' lines of bench_gpu_kernels: the small-batch and grouped paths, FP8
// (per-channel and block scales) beside BF16, on Qwen3-30B-A3B's and Mixtral-8x7B's expert shapes
// with random routing. Bytes are those of the distinct experts the step routes to (each read once
// is the goal), so the percentage is of the H200's copy bandwidth.
#include "tests/gpu/kernels/bench_moe.h"

#include <cstdio>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cuda/kernels/fp8_linear.h"
#include "cuda/kernels/moe.h"
#include "cuda/kernels/moe_fp8.h"
#include "tests/gpu/kernels/bench_util.h"

namespace inferdesk::benchutil {

namespace {

struct MoeShape {
  const char* name;
  int32_t E, k;
  int64_t H, I;
};

template <typename T>
T* upload(Pool& pool, const std::vector<T>& v) {
  auto* p = static_cast<T*>(pool.get(v.size() * sizeof(T)));
  check(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "upload");
  return p;
}

// T tokens routed to k distinct random experts each; the number of distinct experts.
int32_t route(Pool& pool, const MoeShape& s, int T, cuda::MoeStepArgs& a) {
  std::mt19937 g(7);
  std::vector<int32_t> ids;
  std::set<int32_t> used;
  for (int t = 0; t < T; ++t) {
    std::vector<int32_t> all(static_cast<size_t>(s.E));
    for (int32_t e = 0; e < s.E; ++e) all[static_cast<size_t>(e)] = e;
    std::shuffle(all.begin(), all.end(), g);
    for (int j = 0; j < s.k; ++j) ids.push_back(all[static_cast<size_t>(j)]), used.insert(all[static_cast<size_t>(j)]);
  }
  a.ids = upload(pool, ids);
  a.ids_stride = s.k;
  a.weights = upload(pool, std::vector<float>(ids.size(), 1.0f / static_cast<float>(s.k)));
  a.weights_stride = s.k;
  a.top_k = s.k;
  a.experts.num_experts = s.E;
  a.experts.hidden = s.H;
  a.experts.inter = s.I;
  return static_cast<int32_t>(used.size());
}

// Scratch of one step's expert call, both paths and formats.
struct Scratch {
  float* f32;
  int32_t* sort;
  void *xq, *aq;
  int64_t pairs;
};

std::function<void(int)> bf16_path(const cuda::MoeStepArgs& a, const cuda::MoeExpertTable& bt, const Scratch& sc,
                                   bool grouped, const MoeShape& s, const Launch& l) {
  if (!grouped) {
    cuda::MoeSmallArgs b;
    static_cast<cuda::MoeStepArgs&>(b) = a;
    b.experts = bt;
    b.act = reinterpret_cast<cuda::bf16*>(sc.f32);
    b.slot_out = sc.f32 + sc.pairs * s.I;
    return [b, l](int) { cuda::moe_experts_small(b, l); };
  }
  cuda::MoeGroupedArgs b;
  static_cast<cuda::MoeStepArgs&>(b) = a;
  b.experts = bt;
  b.counts = sc.sort, b.offsets = sc.sort + s.E, b.order = sc.sort + 2 * s.E + 1, b.position = b.order + sc.pairs;
  b.act = reinterpret_cast<cuda::bf16*>(sc.f32);
  b.y = sc.f32 + sc.pairs * s.I;
  b.max_pairs = sc.pairs;
  return [b, l](int) { cuda::moe_experts_grouped(b, l); };
}

std::function<void(int)> fp8_path(const cuda::MoeStepArgs& a, const cuda::MoeFp8Table& ft, const Scratch& sc,
                                  bool grouped, const MoeShape& s, const Launch& l) {
  if (!grouped) {
    cuda::MoeFp8SmallArgs b;
    static_cast<cuda::MoeStepArgs&>(b) = a;
    b.fp8 = ft;
    b.act = sc.f32;
    b.slot_out = sc.f32 + sc.pairs * s.I;
    return [b, l](int) { cuda::moe_fp8_experts_small(b, l); };
  }
  cuda::MoeFp8GroupedArgs b;
  static_cast<cuda::MoeStepArgs&>(b) = a;
  b.fp8 = ft;
  b.counts = sc.sort, b.offsets = sc.sort + s.E, b.order = sc.sort + 2 * s.E + 1, b.position = b.order + sc.pairs;
  b.xq = cuda::moe_fp8_x_at(sc.xq, sc.pairs, s.H, ft.block);
  b.act = sc.f32;
  b.aq = cuda::moe_fp8_x_at(sc.aq, sc.pairs, s.I, ft.block);
  b.y = sc.f32 + sc.pairs * s.I;
  b.max_pairs = sc.pairs;
  return [b, l](int) { cuda::moe_fp8_experts_grouped(b, l); };
}

void bench_shape(const MoeShape& s, const Launch& l, const char* filter) {
  const std::string n = s.name;
  if (!wanted("moe " + n, filter)) return;
  Pool pool;
  const int64_t per = s.I * s.H;  // elements of one matrix
  // Codes of every expert (gate, up, down: one [3 E I, H] region) and per-row scales.
  auto* codes = static_cast<uint8_t*>(pool.get(static_cast<size_t>(3 * s.E * per)));
  cuda::fill_random_fp8(codes, 3 * s.E * s.I, s.H, s.H, 1, 0.05f, l);
  const int64_t blocks = (s.I / 128) * ((s.H + 127) / 128);  // scales per matrix, block scheme (>= I, H rows)
  std::vector<float> sv(static_cast<size_t>(3 * s.E * std::max<int64_t>(std::max(s.I, s.H), blocks)), 0.01f);
  const float* scales = upload(pool, sv);
  std::vector<const void*> tab(6 * static_cast<size_t>(s.E));
  for (int32_t m = 0; m < 3; ++m)
    for (int32_t e = 0; e < s.E; ++e) {
      tab[static_cast<size_t>(m * s.E + e)] = codes + (3 * e + m) * per;
      tab[static_cast<size_t>(3 * s.E + m * s.E + e)] = scales;
    }
  const void* const* dtab = upload(pool, tab);
  const Mat bw = random_mat(pool, Dt::BF16, 3 * s.E * s.I, s.H, 2, 0.05f, l);
  std::vector<const void*> btab(3 * static_cast<size_t>(s.E));
  for (int32_t m = 0; m < 3; ++m)
    for (int32_t e = 0; e < s.E; ++e)
      btab[static_cast<size_t>(m * s.E + e)] = static_cast<const cuda::bf16*>(bw.data) + (3 * e + m) * per;
  const void* const* dbtab = upload(pool, btab);

  for (int T : {1, 8, 32}) {
    const int64_t P = int64_t{T} * s.k;
    cuda::MoeStepArgs a;
    const int32_t distinct = route(pool, s, T, a);
    a.x = random_mat(pool, Dt::BF16, T, s.H, 3, 1.0f, l);
    a.out = mat(pool.get(static_cast<size_t>(T * s.H) * 2), Dt::BF16, T, s.H);
    cuda::MoeExpertTable bt;
    bt.gate = reinterpret_cast<const cuda::bf16* const*>(dbtab);
    bt.up = bt.gate + s.E;
    bt.down = bt.gate + 2 * s.E;
    bt.num_experts = s.E;
    bt.hidden = s.H;
    bt.inter = s.I;
    auto* f32 = static_cast<float*>(pool.get(static_cast<size_t>(P * (s.I + s.H)) * 4));
    auto* sort = static_cast<int32_t*>(pool.get(static_cast<size_t>(2 * s.E + 1 + 2 * P) * 4));
    auto* xq = pool.get(static_cast<size_t>(cuda::moe_fp8_x_bytes(P, s.H, true)));
    auto* aq = pool.get(static_cast<size_t>(cuda::moe_fp8_x_bytes(P, s.I, true)));
    const bool grouped = T > cuda::kMoeSmallMaxTokens;
    const std::string shape = n + " T " + std::to_string(T) + " (" + std::to_string(distinct) + " experts)";
    for (int fmt = 0; fmt < 3; ++fmt) {  // BF16, FP8 channel, FP8 block
      const char* what = fmt == 0 ? "bf16" : fmt == 1 ? "fp8-channel" : "fp8-block";
      cuda::MoeFp8Table ft;
      ft.w = reinterpret_cast<const uint8_t* const*>(dtab);
      ft.s = reinterpret_cast<const float* const*>(dtab + 3 * s.E);
      ft.num_experts = s.E;
      ft.hidden = s.H;
      ft.inter = s.I;
      ft.block = fmt == 2;
      const Scratch sc{f32, sort, xq, aq, P};
      const std::function<void(int)> run = fmt == 0 ? bf16_path(a, bt, sc, grouped, s, l)
                                                    : fp8_path(a, ft, sc, grouped, s, l);
      const double us = time_us(l.stream, run);
      report(std::string("moe ") + what, shape, us, static_cast<double>(distinct) * 3 * per * (fmt == 0 ? 2 : 1));
    }
  }
}

}  // namespace

void bench_moe(const Launch& l, const char* filter) {
  for (const MoeShape& s : {MoeShape{"qwen3-30b-a3b", 128, 8, 2048, 768}, MoeShape{"mixtral-8x7b", 8, 2, 4096, 14336}})
    bench_shape(s, l, filter);
}

}  // namespace inferdesk::benchutil
