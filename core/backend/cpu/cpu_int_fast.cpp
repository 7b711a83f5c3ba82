// CpuBackend's fast integer linears (AVX2 / AVX-512 backends; int_kernels.h): few activation rows
// run the register-tiled kernels straight from the packed codes; many rows dequantize tiles of 32
// weight rows to float and reuse the float kernel. Work is split over output rows on the pool.
#include <algorithm>
#include <atomic>
#include <vector>

#include "core/backend/cpu/cpu_backend_impl.h"

namespace inferdesk::cpu {

bool int_vnni_supported() {
#if defined(__x86_64__) && defined(INFERDESK_CPU_HAVE_X86_KERNELS)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

IntKernelTable int_kernels_for(Isa isa) {
#if defined(INFERDESK_CPU_HAVE_X86_KERNELS)
  if (isa == Isa::Avx512) return int_kernels_avx512();
  if (isa == Isa::Avx2) return int_kernels_avx2();
#endif
  return {};  // scalar: the reference in cpu_int_linear.cpp
}

bool CpuBackend::int_fast_path(const QuantInfo& q) const {
  if (!ik_.available || q.act_order) return false;
  return q.granularity == ScaleGranularity::Channel || (q.group_size > 0 && q.group_size % kIntGroupAlign == 0);
}

void CpuBackend::run_int_rows(int64_t N, const std::function<void(int64_t, int64_t)>& fn) {
  const int threads = pool_.size();
  if (threads == 1 || N < 64) {
    fn(0, N);
    return;
  }
  // Dynamic chunks of 32-row multiples, ~16 per thread: a thread descheduled by other work on
  // the machine leaves its share to the others (as run_linear does).
  const int64_t chunk = std::clamp<int64_t>((N / (threads * 16) + 31) / 32 * 32, 32, 512);
  const int64_t chunks = (N + chunk - 1) / chunk;
  std::atomic<int64_t> next{0};
  pool_.run([&](int, int) {
    for (int64_t c = next.fetch_add(1, std::memory_order_relaxed); c < chunks;
         c = next.fetch_add(1, std::memory_order_relaxed))
      fn(c * chunk, std::min(N, (c + 1) * chunk));
  });
}

void CpuBackend::int_weight_fast(const Tensor& x, const Tensor& w, const float* bias, Tensor out) {
  const QuantInfo& q = *w.quant;
  const int64_t T = x.rows, K = x.cols, N = w.rows;
  const int64_t group = q.granularity == ScaleGranularity::Group ? q.group_size : K;
  IntWeightArgs a;
  a.G = q.scale_cols;
  a.group = group;
  float* xp = scratch_int_.floats(T * K + T * a.G);
  a.xp = xp;
  a.xsum = xp + T * K;
  ik_.pack_x(static_cast<const float*>(x.data), x.stride, T, K, q.bits, group, xp, xp + T * K);
  a.w = static_cast<const uint8_t*>(w.data);
  a.w_stride = w.stride * static_cast<int64_t>(dtype_size(w.dtype));
  a.scales = static_cast<const float*>(q.scales);
  a.zeros = q.has_zero_point ? static_cast<const float*>(q.zeros) : nullptr;
  a.bits = q.bits;
  a.K = K;
  a.T = T;
  a.bias = bias;
  a.out = static_cast<float*>(out.data);
  a.out_stride = out.stride;
  if (T <= kIntGemvMaxRows) {
    run_int_rows(N, [&](int64_t n0, int64_t n1) { ik_.weight_rows(a, n0, n1); });
    return;
  }
  constexpr int64_t kTile = 32;
  run_int_rows((N + kTile - 1) / kTile * kTile, [&](int64_t n0, int64_t n1) {
    std::vector<float> tile(static_cast<size_t>(kTile * K));
    for (int64_t t0 = n0; t0 < std::min(n1, N); t0 += kTile) {
      const int64_t rows = std::min(kTile, N - t0);
      ik_.dequant_rows(a, t0, rows, tile.data(), K);
      LinearArgs la;
      la.x = xp;
      la.x_stride = K;
      la.w = tile.data();
      la.w_dtype = DType::F32;
      la.w_stride = K;
      la.bias = bias + t0;
      la.out = a.out + t0;
      la.out_stride = out.stride;
      la.T = T;
      la.K = K;
      la.O = rows;
      k_.linear(la, 0, rows);
    }
  });
}

void CpuBackend::int8_rows_fast(const Int8Args& a, int64_t N) {
  run_int_rows(N, [&](int64_t n0, int64_t n1) { ik_.int8_rows(a, n0, n1); });
}

}  // namespace inferdesk::cpu
