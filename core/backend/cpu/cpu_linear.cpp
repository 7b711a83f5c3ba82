// CpuBackend::linear: the threaded driver around the GEMV (few rows) and GEMM (many rows) kernels.
#include <algorithm>
#include <string>

#include "core/backend/cpu/cpu_backend_impl.h"
#include "core/util/error.h"

namespace inferdesk::cpu {

void CpuBackend::linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor out) {
  if (x.dtype != DType::F32 || out.dtype != DType::F32)
    throw Error(ErrorCode::Internal, "linear: activations must be F32");
  if (w.cols != x.cols || out.cols != w.rows || out.rows != x.rows)
    throw Error(ErrorCode::Internal, "linear: shapes do not match (x " + std::to_string(x.rows) +
                                         "x" + std::to_string(x.cols) + ", w " +
                                         std::to_string(w.rows) + "x" + std::to_string(w.cols) +
                                         ", out " + std::to_string(out.rows) + "x" +
                                         std::to_string(out.cols) + ")");
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
  if (a.T < gemm_min_tokens_) {
    // Memory-bound: split the output rows (i.e. the weight stream) evenly.
    pool_.run([&](int thread, int n) {
      int64_t b, e;
      ThreadPool::split(a.O, 16, thread, n, &b, &e);
      if (b < e) k_.linear_gemv(a, b, e);
    });
    return;
  }
  const int64_t nr = k_.gemm.nr;
  const int64_t mr = k_.gemm.mr;
  const int64_t panels = (a.T + nr - 1) / nr;
  float* packed = scratch_linear_.floats(panels * nr * a.K);
  // Per-thread weight panel: mr rows of K floats, rounded to a cache line.
  const int64_t per_thread = (mr * a.K + 15) / 16 * 16;
  float* wp = scratch_threads_.floats(per_thread * threads);
  pool_.run([&](int thread, int n) {
    for (int64_t p = thread; p < panels; p += n) k_.gemm_pack_x(a, p, packed + p * nr * a.K);
  });
  pool_.run([&](int thread, int n) {
    int64_t b, e;
    ThreadPool::split(a.O, mr, thread, n, &b, &e);
    if (b < e) k_.linear_gemm(a, packed, b, e, wp + per_thread * thread);
  });
}

}  // namespace inferdesk::cpu
