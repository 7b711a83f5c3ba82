// The attention kernels under programmatic dependent launch (PDL): in the forward pass the kernel
// before attention (qk_norm_rope_write_kv) writes this step's K/V into the cache, so attention may
// only read the cache after its pdl_wait(). Each chain below is rope (an identity rotation:
// inv_freq 0) writing this step's K/V into slots that were poisoned with NaN, then attention;
// run with PDL off (plain stream order: the reference), with PDL on eagerly, and captured into a
// CUDA graph with PDL on and replayed (slots poisoned again before every replay). Every run must
// match the CPU backend and be bit-identical to the PDL-off run; an attention block reading the
// cache (or q) early would see NaN. Over an E4M3 cache the rope kernel quantizes this step's K/V,
// and the cache must then hold exactly the bytes of the CPU backend's rounding.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "cuda/kernels/attention.h"
#include "cuda/kernels/common.h"
#include "cuda/kernels/launch.h"
#include "cuda/kernels/rope_kv.h"
#include "tests/gpu/attention/attention_harness.h"
#include "tests/gpu/kernels/kernel_test_util.h"  // CapturedGraph

namespace inferdesk::gputest::attn {
namespace {

class AttentionChain {
 public:
  AttentionChain(const AttnCase& c, Kernel kernel, int32_t splits, cuda::DecodeLoad load)
      : d_(make_data(c)), pending_(make_pending(d_)), kernel_(kernel) {
    make_device(d_, dev_);
    set_splits(dev_, splits);
    dev_.args.decode_load = load;
    k_ = DeviceBuffer<bf16>(to_bf16(pending_.k));
    v_ = DeviceBuffer<bf16>(to_bf16(pending_.v));
    positions_ = DeviceBuffer<int32_t>(pending_.positions);
    slots_ = DeviceBuffer<int32_t>(pending_.slots);
    inv_freq_ = DeviceBuffer<float>(std::vector<float>(static_cast<size_t>(c.head_dim / 2), 0.0f));
    const int64_t kv_row = int64_t{c.num_kv_heads} * c.head_dim;
    rope_.q = dev_.q.get() + c.q_offset;
    rope_.q_stride = d_.q_stride;
    rope_.k = k_.get();
    rope_.k_stride = kv_row;
    rope_.v = v_.get();
    rope_.v_stride = kv_row;
    rope_.inv_freq = inv_freq_.get();
    rope_.rotary_dim = c.head_dim;
    rope_.attention_scaling = 1.0f;
    rope_.positions = positions_.get();
    rope_.slot_mapping = slots_.get();
    rope_.k_cache = const_cast<void*>(dev_.args.k_cache);
    rope_.v_cache = const_cast<void*>(dev_.args.v_cache);
    rope_.kv = c.kv;
    rope_.num_tokens = d_.rows;
    rope_.num_q_heads = c.num_heads;
    rope_.num_kv_heads = c.num_kv_heads;
    rope_.head_dim = c.head_dim;
    rope_.block_size = c.block_size;
  }

  // q, the caches with this step's slots poisoned, a poisoned output and workspace (finished
  // before returning: the uploads go through the legacy stream).
  void reset() {
    refill_device(d_, dev_);
    upload_caches(d_, pending_.k_cache, pending_.v_cache, dev_);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  void enqueue(cudaStream_t stream, bool pdl) {
    const cuda::Launch launch = test_launch(stream, pdl);
    cuda::qk_norm_rope_write_kv(rope_, launch);
    if (kernel_ == Kernel::Decode)
      cuda::paged_attention_decode(dev_.args, launch);
    else
      cuda::paged_attention_prefill(dev_.args, launch);
  }
  const AttnData& data() const { return d_; }
  const DeviceAttn& device() const { return dev_; }

 private:
  AttnData d_;
  PendingKv pending_;
  Kernel kernel_;
  DeviceAttn dev_;
  DeviceBuffer<bf16> k_, v_;
  DeviceBuffer<int32_t> positions_, slots_;
  DeviceBuffer<float> inv_freq_;
  cuda::RopeKvArgs rope_;
};

bool same_bits(const std::vector<bf16>& a, const std::vector<bf16>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(bf16)) == 0;
}

void check_chain(const AttnCase& c, Kernel kernel, int32_t splits, cuda::DecodeLoad load = cuda::DecodeLoad::Auto) {
  SCOPED_TRACE(c.describe() +
               (kernel == Kernel::Decode ? " decode, splits " + std::to_string(splits) : std::string(" prefill")) +
               ", K/V " + load_name(load));
  AttentionChain chain(c, kernel, splits, load);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  std::vector<bf16> reference;
  {
    chain.reset();
    chain.enqueue(stream, /*pdl=*/false);
    CUDA_OK(cudaStreamSynchronize(stream));
    EXPECT_TRUE(output_matches(chain.data(), chain.device(), kTol)) << "PDL off";
    reference = chain.device().out.download();
    if (c.kv.fp8()) {  // an identity rotation: K is quantized from the same BF16 values as on the host
      const AttnData& d = chain.data();
      EXPECT_EQ(chain.device().k_cache.download(), encode_cache(d.k_cache, c.cache_offset, c.kv, false)) << "K cache";
      EXPECT_EQ(chain.device().v_cache.download(), encode_cache(d.v_cache, c.cache_offset, c.kv, true)) << "V cache";
    }
  }

  chain.reset();
  chain.enqueue(stream, /*pdl=*/true);
  CUDA_OK(cudaStreamSynchronize(stream));
  EXPECT_TRUE(output_matches(chain.data(), chain.device(), kTol)) << "PDL on, eager";
  EXPECT_TRUE(same_bits(chain.device().out.download(), reference)) << "PDL on, eager: not bit-identical";

  chain.reset();  // nothing runs during the capture; every replay below is reset first
  const CapturedGraph graph(stream, [&](cudaStream_t s) { chain.enqueue(s, /*pdl=*/true); });
  // rope -> attention became a programmatic edge where PDL is available.
  if (cuda::pdl_supported()) {
    EXPECT_GE(graph.programmatic_edges(), 1u);
  }
  for (int replay = 0; replay < 2; ++replay) {
    chain.reset();
    graph.launch(stream);
    CUDA_OK(cudaStreamSynchronize(stream));
    EXPECT_TRUE(output_matches(chain.data(), chain.device(), kTol)) << "graph replay " << replay;
    EXPECT_TRUE(same_bits(chain.device().out.download(), reference))
        << "graph replay " << replay << ": not bit-identical to PDL off";
  }
  cudaStreamDestroy(stream);
}

TEST(GpuAttentionPdl, PrefillAfterRopeKvWrite) {
  INFERDESK_REQUIRE_GPU();
  // Chunks over cached blocks, decode rows, a padding sequence; D 128 (52 KB of shared memory)
  // and D 256 (66 KB: the opted-in limit must hold for cudaLaunchKernelEx too).
  const std::vector<SeqSpec> seqs = {{37, 300}, {1, 100}, {64, 64}, {3, 0}, {1, 1}, {20, 90}};
  check_chain(make_case(seqs, 8, 2, 128, 16, 201), Kernel::Prefill, 1);
  check_chain(make_case(seqs, 8, 4, 256, 32, 202), Kernel::Prefill, 1);
  AttnCase w = make_case({{45, 70}, {1, 84}, {48, 96}, {1, 61}}, 4, 2, 32, 16, 203);
  w.sliding_window = 32;
  check_chain(w, Kernel::Prefill, 1);
}

TEST(GpuAttentionPdl, DecodeSplitAndCombineAfterRopeKvWrite) {
  INFERDESK_REQUIRE_GPU();
  const std::vector<SeqSpec> seqs = {{1, 1}, {1, 17}, {1, 333}, {1, 0}, {1, 1024}, {1, 64}};
  for (int32_t splits : {1, 5})  // 1: one block per head writes out; 5: the last split merges
    for (auto load : {cuda::DecodeLoad::Registers, cuda::DecodeLoad::Pipelined, cuda::DecodeLoad::Mma}) {
      check_chain(make_case(seqs, 32, 8, 128, 16, 210 + splits), Kernel::Decode, splits, load);
      AttnCase w = make_case(seqs, 4, 2, 32, 16, 220 + splits);
      w.sliding_window = 32;
      check_chain(w, Kernel::Decode, splits, load);  // Mma: D 32 runs the Pipelined kernel
      if (load == cuda::DecodeLoad::Mma) {           // the Mma kernel itself under a window, D 64
        AttnCase w64 = make_case(seqs, 8, 2, 64, 16, 230 + splits);
        w64.sliding_window = 40;
        check_chain(w64, Kernel::Decode, splits, load);
      }
    }
}

// E4M3 caches: the vector rope path (aligned) and the scalar one (a cache 3 bytes off alignment,
// which also takes the attention kernels' unaligned loads), scales below and above 1 (V scale
// 0.002: values above 0.896 saturate at 448).
TEST(GpuAttentionPdl, Fp8CacheAfterRopeKvWrite) {
  INFERDESK_REQUIRE_GPU();
  const std::vector<SeqSpec> prefill = {{37, 300}, {1, 100}, {64, 64}, {3, 0}, {1, 1}, {20, 90}};
  const std::vector<SeqSpec> decode = {{1, 1}, {1, 17}, {1, 333}, {1, 0}, {1, 1024}, {1, 64}};
  check_chain(with_fp8(make_case(prefill, 8, 2, 128, 16, 241), 0.02f, 0.5f), Kernel::Prefill, 1);
  check_chain(with_fp8(make_case(prefill, 8, 4, 256, 32, 242), 2.0f, 0.01f), Kernel::Prefill, 1);
  AttnCase unaligned = with_fp8(make_case(prefill, 4, 2, 64, 16, 243), 0.1f, 0.1f);
  unaligned.cache_offset = 3;
  check_chain(unaligned, Kernel::Prefill, 1);
  for (int32_t splits : {1, 5})
    for (auto load : {cuda::DecodeLoad::Registers, cuda::DecodeLoad::Pipelined, cuda::DecodeLoad::Mma}) {
      check_chain(with_fp8(make_case(decode, 32, 8, 128, 16, 250 + splits), 0.05f, 0.25f), Kernel::Decode, splits,
                  load);
      AttnCase w = with_fp8(make_case(decode, 8, 2, 64, 16, 260 + splits), 4.0f, 0.002f);
      w.sliding_window = 40;
      check_chain(w, Kernel::Decode, splits, load);
      unaligned = with_fp8(make_case(decode, 4, 2, 32, 16, 270 + splits), 0.5f, 1.0f);
      unaligned.cache_offset = 3;
      check_chain(unaligned, Kernel::Decode, splits, load);
    }
}

}  // namespace
}  // namespace inferdesk::gputest::attn
