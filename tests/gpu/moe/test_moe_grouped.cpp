// The grouped expert path (moe_experts_grouped: device sort of the pairs by expert, tensor-core
// gate/up and down kernels over (row tile, expert) blocks, combine in slot order) against the CPU
// backend.
// - Through CudaBackend::moe_experts with the path's bounds raised so it serves every case: T = 9,
//   16, 32, 33, 64, 96 (not multiples of 8; 33: a second pass of one token; 96 at k = 2: three
//   passes over one expert), E = 8, 60, 128 at k = 2
//   and 8, every token on the same experts (up to 64 tokens on one expert: several groups and
//   passes), experts without tokens, hidden/intermediate sizes that are multiples of 8 but not of
//   16 or 32 (partial row tiles, a tail step in K), stacked and separate gate/up; every call must
//   take the grouped path. Qwen3-30B-A3B's expert widths. The default bounds choose small,
//   grouped and large where documented.
// - The launcher itself: the sort's offsets and order (stable), nothing written past the step's
//   pairs in the scratch or outside the output (poisoned), x with a padded row stride, F32 and
//   BF16 outputs; and captured in a CUDA graph (global capture mode: an allocation or a
//   synchronisation inside would break it) with routing and weights changed between replays: each
//   replay gives the bits of an eager run on the same inputs and matches the CPU, and the
//   counters skip padding rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "cuda/kernels/moe.h"
#include "tests/gpu/kernels/kernel_test_util.h"
#include "tests/gpu/moe/moe_harness.h"

namespace inferdesk::gputest {
namespace {

// ------------------------------------------------------------------ through the backend

CudaBackendOptions grouped_everywhere() {
  CudaBackendOptions o;
  o.moe_grouped_max_pairs = 512;  // 64 rows at k = 8
  o.moe_grouped_pairs_per_expert = 512;
  return o;
}

TEST(GpuMoeGrouped, MatchesCpuAcrossShapesAndRoutings) {
  INFERDESK_REQUIRE_GPU();
  MoePair p(grouped_everywhere());
  struct Shape {
    int E, k;
    int64_t H, I;
    bool stacked;
  };
  for (const Shape s : {Shape{8, 2, 136, 88, true}, Shape{8, 8, 136, 88, false}, Shape{60, 2, 264, 184, false},
                        Shape{60, 8, 264, 184, true}, Shape{128, 2, 128, 40, true}, Shape{128, 8, 200, 56, false}}) {
    const MoePair::Experts ex = p.experts(s.E, s.H, s.I, static_cast<uint64_t>(s.E * 10 + s.k), s.stacked);
    for (int T : {9, 16, 32, 33, 64, 96}) {
      if (T * s.k > 512) continue;  // 96 rows at k = 2: up to 96 pairs of one expert, three passes
      for (Route r : {Route::Random, Route::AllToSame, Route::FewExperts})
        run_experts(p, ex, {T, s.E, s.k, s.H, s.I, s.stacked, r}, 0, Path::Grouped);
    }
  }
}

TEST(GpuMoeGrouped, QwenExpertWidths) {
  INFERDESK_REQUIRE_GPU();
  // H 2048, I 768 (16 of Qwen3-30B-A3B's 128 experts): 64 steps of K per block for gate/up,
  // pipelined batches; all-to-same puts 64 tokens on each of 8 experts (two passes of 32).
  MoePair p(grouped_everywhere());
  const MoePair::Experts ex = p.experts(16, 2048, 768, 21, true);
  for (int T : {9, 17, 40, 64})
    for (Route r : {Route::Random, Route::AllToSame})
      run_experts(p, ex, {T, 16, 8, 2048, 768, true, r}, 0, Path::Grouped);
}

TEST(GpuMoeGrouped, RepeatsGiveTheSameBits) {
  INFERDESK_REQUIRE_GPU();
  MoePair p(grouped_everywhere());
  const MoePair::Experts ex = p.experts(60, 264, 184, 8, true);
  for (Route r : {Route::Random, Route::AllToSame}) {
    const ExpertCase c{64, 60, 8, 264, 184, true, r};
    const std::vector<float> a = run_experts(p, ex, c, 0, Path::Grouped);
    const std::vector<float> b = run_experts(p, ex, c, 0, Path::Grouped);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << c;
  }
}

TEST(GpuMoeGrouped, DefaultBoundsChooseThePath) {
  INFERDESK_REQUIRE_GPU();
  MoePair p;  // moe_grouped_max_pairs 1024, moe_grouped_pairs_per_expert 16
  // 128 experts at top-8: min(1024, 16 * 128) = 1024 pairs, 128 rows.
  const MoePair::Experts q = p.experts(128, 128, 40, 31, true);
  run_experts(p, q, {8, 128, 8, 128, 40, true, Route::Random}, 0, Path::Small);
  run_experts(p, q, {9, 128, 8, 128, 40, true, Route::Random}, 0, Path::Grouped);
  run_experts(p, q, {128, 128, 8, 128, 40, true, Route::Random}, 0, Path::Grouped);
  run_experts(p, q, {129, 128, 8, 128, 40, true, Route::Random}, 0, Path::Large);
  // 8 experts at top-2: min(1024, 16 * 8) = 128 pairs, 64 rows.
  const MoePair::Experts m = p.experts(8, 136, 88, 32, false);
  run_experts(p, m, {64, 8, 2, 136, 88, false, Route::Random}, 1, Path::Grouped);
  run_experts(p, m, {65, 8, 2, 136, 88, false, Route::Random}, 1, Path::Large);
}

TEST(GpuMoeGrouped, OffWhenItsBoundIsZero) {
  INFERDESK_REQUIRE_GPU();
  CudaBackendOptions o;
  o.moe_grouped_pairs_per_expert = 0;
  MoePair p(o);
  const MoePair::Experts ex = p.experts(8, 136, 88, 33, true);
  run_experts(p, ex, {9, 8, 2, 136, 88, true, Route::Random}, 0, Path::Large);
}

// ------------------------------------------------------------------- the launcher itself

// E experts of gate/up [I, H] and down [H, I] on the device (one allocation per matrix, a device
// table of their pointers) and the same BF16 values on the CPU backend.
struct KernelExperts {
  CpuRef cpu;
  std::vector<DeviceBuffer<bf16>> mats;
  std::unique_ptr<DeviceBuffer<const bf16*>> table;
  std::vector<ExpertWeights> cpu_views;
  cuda::MoeExpertTable tbl;

  KernelExperts(int E, int64_t H, int64_t I, uint64_t seed) {
    const float sg = std::sqrt(3.0f / static_cast<float>(H)), sd = std::sqrt(3.0f / static_cast<float>(I));
    std::vector<const bf16*> ptr(static_cast<size_t>(3 * E));
    mats.reserve(static_cast<size_t>(3 * E));
    for (int m = 0; m < 3; ++m)
      for (int e = 0; e < E; ++e) {
        const int64_t rows = m == 2 ? H : I, cols = m == 2 ? I : H;
        const float s = m == 2 ? sd : sg;
        const std::vector<float> v = random_bf16(static_cast<size_t>(rows * cols),
                                                 seed * 1000 + static_cast<uint64_t>(m * E + e), -s, s);
        mats.emplace_back(to_bf16(v));
        ptr[static_cast<size_t>(m * E + e)] = mats.back().get();
        const Tensor t = cpu.bf16_weight(rows, cols, v);
        if (m == 0) cpu_views.emplace_back();
        ExpertWeights& w = cpu_views[static_cast<size_t>(e)];
        (m == 0 ? w.gate : m == 1 ? w.up : w.down) = t;
      }
    table = std::make_unique<DeviceBuffer<const bf16*>>(ptr);
    tbl.gate = table->get();
    tbl.up = table->get() + E;
    tbl.down = table->get() + 2 * E;
    tbl.num_experts = E;
    tbl.hidden = H;
    tbl.inter = I;
  }

  // The CPU backend's moe_experts on these ids and weights.
  std::vector<float> reference(const std::vector<float>& x, const std::vector<int32_t>& ids,
                               const std::vector<float>& w, int T, int k) {
    const int64_t H = tbl.hidden;
    const Tensor out = cpu.zeros(T, H);
    cpu->moe_experts(0, cpu.tensor(T, H, x), cpu_views, int_tensor(T, k, ids), cpu.tensor(T, k, w), out);
    return cpu.host(out);
  }

 private:
  Tensor int_tensor(int64_t rows, int64_t cols, const std::vector<int32_t>& v) {
    ints_.push_back(cpu->alloc(DType::I32, rows, cols));
    Tensor t = ints_.back().tensor();
    std::memcpy(t.data, v.data(), v.size() * 4);
    return t;
  }
  std::vector<Buffer> ints_;
};

// Scratch of the grouped path for `capacity` pairs, poisoned (0xFF bytes: -1, NaN).
struct GroupedScratch {
  DeviceBuffer<int32_t> counts, offsets, order, position;
  DeviceBuffer<bf16> act;
  DeviceBuffer<float> y;
  GroupedScratch(int E, int64_t capacity, int64_t H, int64_t I)
      : counts(static_cast<size_t>(E)),
        offsets(static_cast<size_t>(E) + 1),
        order(static_cast<size_t>(capacity)),
        position(static_cast<size_t>(capacity)),
        act(static_cast<size_t>(capacity * I)),
        y(static_cast<size_t>(capacity * H)) {}
  void fill(cuda::MoeGroupedArgs& a, int64_t capacity) {
    a.counts = counts.get();
    a.offsets = offsets.get();
    a.order = order.get();
    a.position = position.get();
    a.act = act.get();
    a.y = y.get();
    a.max_pairs = capacity;
  }
};

template <typename T>
uint64_t raw_bits(const T& v) {
  uint64_t r = 0;
  std::memcpy(&r, &v, sizeof(T));
  return r;
}
// Elements [from, n) of v still hold the poison pattern (all bytes 0xFF).
template <typename T>
int64_t unpoisoned_from(const std::vector<T>& v, size_t from) {
  const uint64_t poison = sizeof(T) == 8 ? ~0ull : (1ull << (8 * sizeof(T))) - 1;
  int64_t n = 0;
  for (size_t i = from; i < v.size(); ++i) n += raw_bits(v[i]) != poison;
  return n;
}

struct LaunchCase {
  int T, E, k;
  int64_t H, I;
  Route route;
  Dt out_dt;
};

std::ostream& operator<<(std::ostream& os, const LaunchCase& c) {
  return os << ExpertCase{c.T, c.E, c.k, c.H, c.I, true, c.route} << " out " << dt_name(c.out_dt);
}

void run_launcher(KernelExperts& ex, const LaunchCase& c) {
  SCOPED_TRACE(testing::Message() << c);
  const int64_t P = int64_t{c.T} * c.k, capacity = P + 37;
  const uint64_t seed = static_cast<uint64_t>(c.T * 7919 + c.E * 31 + c.k);
  const std::vector<int32_t> ids = make_ids({c.T, c.E, c.k, c.H, c.I, true, c.route}, seed);
  const std::vector<float> w = random_vector(static_cast<size_t>(P), seed + 1, 0.05f, 1.0f);
  const std::vector<float> x = random_bf16(static_cast<size_t>(c.T * c.H), seed + 2);
  DevMatrix dx(Dt::BF16, c.T, c.H, c.H + 8);  // padded rows: the kernels must use the stride
  dx.upload(x);
  DevMatrix dout(c.out_dt, c.T, c.H, c.H + 8, 4);
  DeviceBuffer<int32_t> dids(ids);
  DeviceBuffer<float> dw(w);
  GroupedScratch s(c.E, capacity, c.H, c.I);

  cuda::MoeGroupedArgs a;
  a.x = dx.mat();
  a.ids = dids.get();
  a.ids_stride = c.k;
  a.weights = dw.get();
  a.weights_stride = c.k;
  a.top_k = c.k;
  a.experts = ex.tbl;
  s.fill(a, capacity);
  a.out = dout.mat();
  CUDA_OK(cudaDeviceSynchronize());
  cuda::moe_experts_grouped(a, test_launch());
  CUDA_OK(cudaDeviceSynchronize());

  EXPECT_LT(normalised_error(dout.download(), ex.reference(x, ids, w, c.T, c.k)), kTolMoe);
  EXPECT_EQ(dout.damaged_padding(), 0) << "wrote outside the output";

  // The sort: counts, exclusive offsets, pairs of one expert in pair order, position = inverse.
  std::vector<int32_t> want_counts(static_cast<size_t>(c.E), 0);
  for (int32_t e : ids) ++want_counts[static_cast<size_t>(e)];
  std::vector<int32_t> want_order(static_cast<size_t>(P));
  std::iota(want_order.begin(), want_order.end(), 0);
  std::stable_sort(want_order.begin(), want_order.end(),
                   [&](int32_t l, int32_t r) { return ids[static_cast<size_t>(l)] < ids[static_cast<size_t>(r)]; });
  const std::vector<int32_t> counts = s.counts.download(), offsets = s.offsets.download(), order = s.order.download(),
                             position = s.position.download();
  EXPECT_EQ(counts, want_counts);
  int32_t acc = 0;
  for (int e = 0; e <= c.E; ++e) {
    EXPECT_EQ(offsets[static_cast<size_t>(e)], acc) << "offset of expert " << e;
    if (e < c.E) acc += want_counts[static_cast<size_t>(e)];
  }
  EXPECT_TRUE(std::equal(want_order.begin(), want_order.end(), order.begin())) << "order";
  for (int64_t i = 0; i < P; ++i)
    ASSERT_EQ(position[static_cast<size_t>(order[static_cast<size_t>(i)])], i) << "position";
  // Every row of the step written, nothing past it.
  EXPECT_EQ(unpoisoned_from(order, static_cast<size_t>(P)), 0) << "order past the pairs";
  EXPECT_EQ(unpoisoned_from(position, static_cast<size_t>(P)), 0) << "position past the pairs";
  const std::vector<bf16> act = s.act.download();
  const std::vector<float> y = s.y.download();
  EXPECT_EQ(unpoisoned_from(act, static_cast<size_t>(P * c.I)), 0) << "act past the pairs";
  EXPECT_EQ(unpoisoned_from(y, static_cast<size_t>(P * c.H)), 0) << "y past the pairs";
  for (int64_t i = 0; i < P * c.I; ++i)
    ASSERT_TRUE(std::isfinite(bf16_to_float(act[static_cast<size_t>(i)]))) << "act element " << i;
  for (int64_t i = 0; i < P * c.H; ++i) ASSERT_TRUE(std::isfinite(y[static_cast<size_t>(i)])) << "y element " << i;
}

TEST(GpuMoeGroupedLauncher, SortsComputesAndWritesOnlyItsRows) {
  INFERDESK_REQUIRE_GPU();
  struct Shape {
    int E, k;
    int64_t H, I;
  };
  for (const Shape sh : {Shape{8, 2, 136, 88}, Shape{60, 8, 264, 184}, Shape{128, 8, 200, 56}}) {
    KernelExperts ex(sh.E, sh.H, sh.I, static_cast<uint64_t>(sh.E));
    int n = 0;
    for (int T : {1, 3, 9, 33, 64})
      for (Route r : {Route::Random, Route::AllToSame, Route::FewExperts})
        run_launcher(ex, {T, sh.E, sh.k, sh.H, sh.I, r, ++n % 2 ? Dt::BF16 : Dt::F32});
  }
}

// Router logits [T, E] for a replay: random, or every token preferring experts 5, 6, ... in that
// order (all T tokens on the same k experts: ceil(T / 32) passes each).
std::vector<float> logits_for(int variant, int T, int E) {
  std::vector<float> v = random_vector(static_cast<size_t>(T * E), 500 + static_cast<uint64_t>(variant), -3, 3);
  if (variant == 1)
    for (int t = 0; t < T; ++t)
      for (int e = 0; e < E; ++e)
        v[static_cast<size_t>(t * E + e)] = -0.25f * static_cast<float>((e - 5 + E) % E) +
                                            0.001f * static_cast<float>(t % 3);
  return v;
}

void run_graph(bool pdl) {
  SCOPED_TRACE(pdl ? "PDL on" : "PDL off");
  const int T = 40, E = 60, k = 8;
  const int64_t H = 264, I = 136, P = int64_t{T} * k;
  KernelExperts ex(E, H, I, 77);
  DeviceBuffer<float> logits(static_cast<size_t>(T * E));
  DeviceBuffer<int32_t> ids(static_cast<size_t>(T * k));
  DeviceBuffer<float> weights(static_cast<size_t>(T * k));
  DevMatrix x(Dt::BF16, T, H);
  DevMatrix out(Dt::BF16, T, H, H + 8);
  GroupedScratch s(E, P, H, I);
  DeviceBuffer<unsigned long long> counters(static_cast<size_t>(E));
  std::vector<int32_t> slots(static_cast<size_t>(T));
  for (int t = 0; t < T; ++t) slots[static_cast<size_t>(t)] = t < T - 3 ? 2 * t : -1;  // 3 padding rows
  DeviceBuffer<int32_t> dslots(slots);

  cuda::MoeGroupedArgs a;
  a.x = x.mat();
  a.ids = ids.get();
  a.ids_stride = k;
  a.weights = weights.get();
  a.weights_stride = k;
  a.top_k = k;
  a.experts = ex.tbl;
  s.fill(a, P);
  a.out = out.mat();
  a.counters = counters.get();
  a.row_slots = dslots.get();
  auto enqueue = [&](cudaStream_t st) {
    cuda::moe_route(logits.get(), E, T, E, k, true, ids.get(), k, weights.get(), k, test_launch(st, pdl));
    cuda::moe_experts_grouped(a, test_launch(st, pdl));
  };
  // Inputs of a run: router logits (so routing) and x.
  auto set_inputs = [&](int variant) {
    logits.upload(logits_for(variant, T, E));
    x.upload(random_bf16(static_cast<size_t>(T * H), 900 + static_cast<uint64_t>(variant)));
    out.upload(std::vector<float>(static_cast<size_t>(T * H), NAN));
    CUDA_OK(cudaMemset(counters.get(), 0, E * sizeof(unsigned long long)));
    CUDA_OK(cudaDeviceSynchronize());
  };

  Stream stream;
  // Eager runs of three routings: the bits every replay of the same inputs must give.
  std::vector<std::vector<uint8_t>> eager(3);
  for (int v = 0; v < 3; ++v) {
    set_inputs(v);
    enqueue(stream.get());
    CUDA_OK(cudaStreamSynchronize(stream.get()));
    eager[static_cast<size_t>(v)] = out.raw_download();
    const std::vector<int32_t> hid = ids.download();
    const std::vector<float> hw = weights.download();
    EXPECT_LT(normalised_error(out.download(), ex.reference(x.download(), hid, hw, T, k)), kTolMoe)
        << "eager routing " << v;
    if (v == 1) {
      EXPECT_EQ(std::count(hid.begin(), hid.end(), 5), T) << "every token on expert 5";
    }
  }

  set_inputs(0);
  CapturedGraph graph(stream.get(), enqueue);
  for (int v : {1, 0, 2, 1}) {
    SCOPED_TRACE(testing::Message() << "replay with routing " << v);
    set_inputs(v);
    ids.poison();
    weights.poison();
    s.offsets.poison();
    s.y.poison();
    CUDA_OK(cudaDeviceSynchronize());
    graph.launch(stream.get());
    CUDA_OK(cudaStreamSynchronize(stream.get()));
    const std::vector<uint8_t> got = out.raw_download();
    EXPECT_TRUE(got == eager[static_cast<size_t>(v)]) << "replay differs from the eager run";
    EXPECT_EQ(out.damaged_padding(), 0);
    const std::vector<int32_t> hid = ids.download();
    const std::vector<unsigned long long> c = counters.download();
    std::vector<unsigned long long> want(static_cast<size_t>(E), 0);
    for (int t = 0; t < T - 3; ++t)
      for (int j = 0; j < k; ++j) ++want[static_cast<size_t>(hid[static_cast<size_t>(t * k + j)])];
    EXPECT_EQ(c, want) << "counters (padding rows excluded)";
  }
}

TEST(GpuMoeGroupedLauncher, CapturedGraphServesNewRoutingOnEveryReplay) {
  INFERDESK_REQUIRE_GPU();
  run_graph(true);
  run_graph(false);
}

}  // namespace
}  // namespace inferdesk::gputest
