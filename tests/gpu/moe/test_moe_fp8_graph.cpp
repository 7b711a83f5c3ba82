// The FP8 decode-time expert paths (moe_route, then moe_fp8_experts_small or
// moe_fp8_experts_grouped) captured into a CUDA graph in global capture mode (an allocation or a
// synchronisation inside would break the capture), with programmatic dependent launch on and off:
// replays give the eager run's bits, also after the routing changed and changed back, and the
// expert counters advance by the same counts on every replay.
#include <gtest/gtest.h>

#include <cstring>

#include "cuda/kernels/moe.h"
#include "cuda/kernels/moe_fp8.h"
#include "tests/gpu/kernels/fp8_test_util.h"

namespace inferdesk::gputest {
namespace {

constexpr int kE = 16, kK = 4;
constexpr int64_t kH = 272, kI = 144;  // partial 128-groups in both projections

// The experts' codes and scales on the device and the kernels' table of them.
struct DevExperts {
  std::vector<DevFp8> mats;
  DeviceBuffer<const void*> table;
  cuda::MoeFp8Table t;
  explicit DevExperts(const Fp8Scheme& s) {
    std::vector<const void*> w(3 * kE), sc(3 * kE);
    for (int m = 0; m < 3; ++m)
      for (int e = 0; e < kE; ++e) {
        const HostFp8 h = make_fp8_weight(m == 2 ? kH : kI, m == 2 ? kI : kH, s, 300 + m * kE + e);
        mats.emplace_back(h);
        w[m * kE + e] = mats.back().codes.get();
        sc[m * kE + e] = mats.back().scales.get();
      }
    w.insert(w.end(), sc.begin(), sc.end());
    table = DeviceBuffer<const void*>(w);
    t.w = reinterpret_cast<const uint8_t* const*>(table.get());
    t.s = reinterpret_cast<const float* const*>(table.get() + 3 * kE);
    t.num_experts = kE;
    t.hidden = kH;
    t.inter = kI;
    t.block = s.gran == ScaleGranularity::Block;
  }
};

void fill_step(cuda::MoeStepArgs& a, int T, bf16* x, int32_t* ids, float* weights, bf16* out,
               unsigned long long* counters) {
  a.x = cuda::Mat{x, Dt::BF16, T, kH, kH};
  a.ids = ids;
  a.ids_stride = kK;
  a.weights = weights;
  a.weights_stride = kK;
  a.top_k = kK;
  a.experts.num_experts = kE;
  a.experts.hidden = kH;
  a.experts.inter = kI;
  a.out = cuda::Mat{out, Dt::BF16, T, kH, kH};
  a.counters = counters;
}

void run_capture(bool pdl, bool grouped, const Fp8Scheme& s) {
  SCOPED_TRACE(testing::Message() << (pdl ? "PDL on" : "PDL off") << (grouped ? " grouped " : " small ")
                                  << scheme_name(s));
  const int T = grouped ? 24 : 6;
  const DevExperts ex(s);
  DeviceBuffer<float> logits(random_vector(static_cast<size_t>(T * kE), 11, -3, 3));
  const std::vector<float> other = random_vector(static_cast<size_t>(T * kE), 12, -3, 3);
  DeviceBuffer<int32_t> ids(static_cast<size_t>(T * kK));
  DeviceBuffer<float> weights(static_cast<size_t>(T * kK));
  DeviceBuffer<bf16> x(to_bf16(random_vector(static_cast<size_t>(T * kH), 13)));
  DeviceBuffer<bf16> out(static_cast<size_t>(T * kH));
  DeviceBuffer<unsigned long long> counters(static_cast<size_t>(kE));
  CUDA_OK(cudaMemset(counters.get(), 0, kE * sizeof(unsigned long long)));
  const int64_t P = int64_t{T} * kK;
  // Scratch of both paths (the grouped one sized for P pairs).
  DeviceBuffer<float> act(static_cast<size_t>(P * kI)), slot_out(static_cast<size_t>(P * kH));
  DeviceBuffer<int32_t> sort(static_cast<size_t>(2 * kE + 1 + 2 * P));
  DeviceBuffer<uint8_t> xq(static_cast<size_t>(cuda::moe_fp8_x_bytes(P, kH, true)));
  DeviceBuffer<uint8_t> aq(static_cast<size_t>(cuda::moe_fp8_x_bytes(P, kI, true)));

  cuda::MoeFp8SmallArgs sa;
  cuda::MoeFp8GroupedArgs ga;
  fill_step(sa, T, x.get(), ids.get(), weights.get(), out.get(), counters.get());
  fill_step(ga, T, x.get(), ids.get(), weights.get(), out.get(), counters.get());
  sa.fp8 = ga.fp8 = ex.t;
  sa.act = ga.act = act.get();
  sa.slot_out = ga.y = slot_out.get();
  ga.counts = sort.get();
  ga.offsets = ga.counts + kE;
  ga.order = ga.offsets + kE + 1;
  ga.position = ga.order + P;
  ga.xq = cuda::moe_fp8_x_at(xq.get(), P, kH, ex.t.block);
  ga.aq = cuda::moe_fp8_x_at(aq.get(), P, kI, ex.t.block);
  ga.max_pairs = P;
  auto enqueue = [&](cudaStream_t st) {
    cuda::moe_route(logits.get(), kE, T, kE, kK, true, ids.get(), kK, weights.get(), kK, test_launch(st, pdl));
    if (grouped)
      cuda::moe_fp8_experts_grouped(ga, test_launch(st, pdl));
    else
      cuda::moe_fp8_experts_small(sa, test_launch(st, pdl));
  };

  Stream stream;
  CUDA_OK(cudaDeviceSynchronize());  // the uploads above ran on the legacy stream
  enqueue(stream.get());
  CUDA_OK(cudaStreamSynchronize(stream.get()));
  const std::vector<bf16> eager = out.download();
  const std::vector<unsigned long long> eager_counts = counters.download();
  for (float v : to_float(eager)) ASSERT_TRUE(std::isfinite(v));

  CapturedGraph graph(stream.get(), enqueue);
  const std::vector<float> first = logits.download();
  for (int replay = 1; replay <= 3; ++replay) {
    // Replay 2 routes differently (other logits): its output must differ; 3 routes as before.
    logits.upload(replay == 2 ? other : first);
    out.poison();
    ids.poison();
    CUDA_OK(cudaDeviceSynchronize());
    graph.launch(stream.get());
    CUDA_OK(cudaStreamSynchronize(stream.get()));
    const std::vector<bf16> got = out.download();
    const bool same = std::memcmp(got.data(), eager.data(), got.size() * sizeof(bf16)) == 0;
    EXPECT_EQ(same, replay != 2) << "replay " << replay;
    for (float v : to_float(got)) ASSERT_TRUE(std::isfinite(v)) << "replay " << replay;
  }
  const std::vector<unsigned long long> c = counters.download();
  unsigned long long total = 0, eager_total = 0;
  for (int e = 0; e < kE; ++e) total += c[static_cast<size_t>(e)], eager_total += eager_counts[static_cast<size_t>(e)];
  EXPECT_EQ(eager_total, static_cast<unsigned long long>(P));
  EXPECT_EQ(total, 4 * eager_total);
}

TEST(GpuMoeFp8Graph, SmallPathIsCapturableAndReplaysTheEagerBits) {
  INFERDESK_REQUIRE_GPU();
  for (const Fp8Scheme& s : {Fp8Scheme{ScaleGranularity::Channel, ActQuant::DynamicToken},
                             Fp8Scheme{ScaleGranularity::Block, ActQuant::DynamicGroup}})
    for (bool pdl : {true, false}) run_capture(pdl, false, s);
}

TEST(GpuMoeFp8Graph, GroupedPathIsCapturableAndReplaysTheEagerBits) {
  INFERDESK_REQUIRE_GPU();
  for (const Fp8Scheme& s : {Fp8Scheme{ScaleGranularity::Channel, ActQuant::DynamicToken},
                             Fp8Scheme{ScaleGranularity::Block, ActQuant::DynamicGroup}})
    for (bool pdl : {true, false}) run_capture(pdl, true, s);
}

}  // namespace
}  // namespace inferdesk::gputest
