// CpuBackend::linear: hands chunks of output features to the pool; kernels.h does the rest.
#include <algorithm>
#include <atomic>
#include <string>

#include "core/backend/cpu/cpu_backend_impl.h"
#include "core/util/error.h"

namespace inferdesk::cpu {

void CpuBackend::linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor out) {
  if (x.dtype != DType::F32 || out.dtype != DType::F32)
    throw Error(ErrorCode::Internal, "linear: activations must be F32");
  if (w.in_features() != x.cols || out.cols != w.rows || out.rows != x.rows)
    throw Error(ErrorCode::Internal, "linear: shapes do not match (x " + std::to_string(x.rows) + "x" +
                                         std::to_string(x.cols) + ", w " + std::to_string(w.rows) + "x" +
                                         std::to_string(w.cols) + ", out " + std::to_string(out.rows) + "x" +
                                         std::to_string(out.cols) + ")");
  if (w.quant) {
    quant_linear(x, w, bias, out);
    return;
  }
  LinearArgs a;
  a.x = static_cast<const float*>(x.data);
  a.x_stride = x.stride;
  a.w = w.data;
  a.w_dtype = w.dtype;
  a.w_stride = w.stride;
  if (bias && !bias->empty()) {
    a.bias = bias->data;
    a.bias_dtype = bias->dtype;
  }
  a.out = static_cast<float*>(out.data);
  a.out_stride = out.stride;
  a.T = x.rows;
  a.K = x.cols;
  a.O = w.rows;
  run_linear(a);
}

void CpuBackend::run_linear(const LinearArgs& a) {
  if (a.T <= 0 || a.O <= 0) return;
  const int threads = pool_.size();
  if (threads == 1) {
    k_.linear(a, 0, a.O);
    return;
  }
  // Chunks of output rows (multiples of the kernel's 32-row blocks, ~16 per thread) handed out
  // dynamically: on a machine shared with other work a descheduled thread's share is picked up
  // by the others instead of stalling the whole op.
  const int64_t chunk = std::clamp<int64_t>((a.O / (threads * 16) + 31) / 32 * 32, 32, 512);
  const int64_t chunks = (a.O + chunk - 1) / chunk;
  std::atomic<int64_t> next{0};
  pool_.run([&](int, int) {
    for (int64_t c = next.fetch_add(1, std::memory_order_relaxed); c < chunks;
         c = next.fetch_add(1, std::memory_order_relaxed)) {
      k_.linear(a, c * chunk, std::min(a.O, (c + 1) * chunk));
    }
  });
}

}  // namespace inferdesk::cpu
