// CpuBackend::linear: splits the output features across the pool; kernels.h does the rest.
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
  // Split the output rows (i.e. the weight stream) evenly; each thread sees every token.
  pool_.run([&](int thread, int n) {
    int64_t b, e;
    ThreadPool::split(a.O, 32, thread, n, &b, &e);
    if (b < e) k_.linear(a, b, e);
  });
}

}  // namespace inferdesk::cpu
