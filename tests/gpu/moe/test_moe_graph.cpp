// The decode-time MoE kernels (moe_route, moe_experts_small) captured into a CUDA graph in global
// capture mode (an allocation or a synchronisation inside would break the capture), with
// programmatic dependent launch on and off: replays give the eager run's bits, the expert counters
// advance by the same counts on every replay, and rows whose slot is -1 (padding rows of a graph
// bucket) are not counted.
#include <gtest/gtest.h>

#include <cstring>

#include "cuda/kernels/moe.h"
#include "tests/gpu/kernels/kernel_test_util.h"

namespace inferdesk::gputest {
namespace {

void run_capture(bool pdl) {
  SCOPED_TRACE(pdl ? "PDL on" : "PDL off");
  const int T = 4, E = 16, k = 4;
  const int64_t H = 264, I = 136;
  DeviceBuffer<float> logits(random_vector(static_cast<size_t>(T * E), 11, -3, 3));
  DeviceBuffer<int32_t> ids(static_cast<size_t>(T * k));
  DeviceBuffer<float> weights(static_cast<size_t>(T * k));
  DeviceBuffer<bf16> x(to_bf16(random_vector(static_cast<size_t>(T * H), 12)));
  std::vector<DeviceBuffer<bf16>> w;
  std::vector<const bf16*> table(static_cast<size_t>(3 * E));
  for (int m = 0; m < 3; ++m)
    for (int e = 0; e < E; ++e) {
      const int64_t n = H * I;
      const float s = m == 2 ? 0.15f : 0.1f;
      w.emplace_back(to_bf16(random_vector(static_cast<size_t>(n), 100 + m * E + e, -s, s)));
      table[static_cast<size_t>(m * E + e)] = w.back().get();
    }
  DeviceBuffer<const bf16*> dtable(table);
  DeviceBuffer<bf16> act(static_cast<size_t>(cuda::kMoeSmallMaxTokens * k * I));
  DeviceBuffer<float> slot_out(static_cast<size_t>(cuda::kMoeSmallMaxTokens * k * H));
  DeviceBuffer<bf16> out(static_cast<size_t>(T * H));
  DeviceBuffer<unsigned long long> counters(static_cast<size_t>(E));
  CUDA_OK(cudaMemset(counters.get(), 0, E * sizeof(unsigned long long)));
  DeviceBuffer<int32_t> slots(std::vector<int32_t>{5, 9, 13, -1});  // row 3 is padding

  cuda::MoeSmallArgs a;
  a.x = cuda::Mat{x.get(), Dt::BF16, T, H, H};
  a.ids = ids.get();
  a.ids_stride = k;
  a.weights = weights.get();
  a.weights_stride = k;
  a.top_k = k;
  a.experts.gate = dtable.get();
  a.experts.up = dtable.get() + E;
  a.experts.down = dtable.get() + 2 * E;
  a.experts.num_experts = E;
  a.experts.hidden = H;
  a.experts.inter = I;
  a.act = act.get();
  a.slot_out = slot_out.get();
  a.out = cuda::Mat{out.get(), Dt::BF16, T, H, H};
  a.counters = counters.get();
  a.row_slots = slots.get();
  auto enqueue = [&](cudaStream_t s) {
    cuda::moe_route(logits.get(), E, T, E, k, true, ids.get(), k, weights.get(), k, test_launch(s, pdl));
    cuda::moe_experts_small(a, test_launch(s, pdl));
  };

  Stream stream;
  CUDA_OK(cudaDeviceSynchronize());  // the uploads above ran on the legacy stream
  enqueue(stream.get());
  CUDA_OK(cudaStreamSynchronize(stream.get()));
  const std::vector<bf16> eager = out.download();
  const std::vector<unsigned long long> eager_counts = counters.download();
  unsigned long long counted = 0;
  for (auto c : eager_counts) counted += c;
  EXPECT_EQ(counted, static_cast<unsigned long long>((T - 1) * k)) << "padding row counted";
  for (float v : to_float(eager)) ASSERT_TRUE(std::isfinite(v));

  CapturedGraph graph(stream.get(), enqueue);
  for (int replay = 1; replay <= 2; ++replay) {
    out.poison();
    ids.poison();
    CUDA_OK(cudaDeviceSynchronize());
    graph.launch(stream.get());
    CUDA_OK(cudaStreamSynchronize(stream.get()));
    const std::vector<bf16> got = out.download();
    EXPECT_EQ(std::memcmp(got.data(), eager.data(), got.size() * sizeof(bf16)), 0) << "replay " << replay;
    const std::vector<unsigned long long> c = counters.download();
    for (int e = 0; e < E; ++e)
      EXPECT_EQ(c[static_cast<size_t>(e)], eager_counts[static_cast<size_t>(e)] * (replay + 1)) << "expert " << e;
  }
}

TEST(GpuMoeGraph, SmallPathIsCapturableAndReplaysTheEagerBits) {
  INFERDESK_REQUIRE_GPU();
  run_capture(true);
  run_capture(false);
}

}  // namespace
}  // namespace inferdesk::gputest
