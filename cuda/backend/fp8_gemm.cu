#include "cuda/backend/fp8_gemm.h"

#include <string>

#include "core/util/error.h"
#include "cuda/backend/cublaslt_util.h"

namespace inferdesk::cuda {

namespace {

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

int64_t padded_groups(int64_t groups) { return (groups + 3) / 4 * 4; }

}  // namespace

void Fp8Gemm::set_pointers(cublasLtMatmulDesc_t op, const Pointers& p) {
  check_cublaslt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &p.a_scale,
                                                sizeof(p.a_scale)),
                 "a scale pointer");
  check_cublaslt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &p.b_scale,
                                                sizeof(p.b_scale)),
                 "b scale pointer");
  if (p.bias)
    check_cublaslt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p.bias, sizeof(p.bias)),
                   "bias pointer");
}

struct Fp8Gemm::Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool ok = false;  // cuBLASLt had an algorithm
  ~Plan() {
    if (op) cublasLtMatmulDescDestroy(op);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (d) cublasLtMatrixLayoutDestroy(d);
  }
};

Fp8Gemm::Fp8Gemm(CudaContext& ctx) : ctx_(ctx) {
  int major = 0;
  check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ctx_.device), "querying the GPU");
  hopper_ = major == 9;
}

Fp8Gemm::~Fp8Gemm() {
  plans_.clear();
  if (handle_) cublasLtDestroy(handle_);
}

bool Fp8Gemm::eligible(const Fp8X& x, const Fp8Weight& w, const Mat& y) const {
  const int64_t es = y.dt == Dt::F32 ? 4 : 2;
  return hopper_ && x.rows > 0 && x.cols == w.k && w.k % 16 == 0 && w.n % 16 == 0 && x.stride % 16 == 0 &&
         aligned16(x.q) && aligned16(w.data) && aligned16(y.data) && (y.stride * es) % 16 == 0 && y.cols == w.n &&
         y.rows >= x.rows;
}

// Row-major y[M, N] = x[M, K] W[N, K]^T as cuBLASLt's column-major D[N, M] = A^T B with A = W seen
// as K x N and B = x seen as K x M (the "TN" layout FP8 matmuls need). cuBLASLt's M is our N, so
// the A (weight) scales are the per-row ones and the B (activation) scales the per-column ones.
Fp8Gemm::Plan* Fp8Gemm::plan(const Key& key, const Pointers& ptr) {
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second.get();
  const auto [m, n, k, ldx, ldy, out_f32, has_bias, block] = key;
  if (!handle_) check_cublaslt(cublasLtCreate(&handle_), "create");
  if (!workspace_.get()) workspace_ = ctx_.memory.alloc(workspace_bytes_, MemKind::Other, "cuBLASLt FP8 workspace");
  auto p = std::make_unique<Plan>();
  check_cublaslt(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  check_cublaslt(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)), "transa");
  check_cublaslt(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)), "transb");
  const int32_t a_mode = block ? CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F
                               : CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
  const int32_t b_mode = block ? CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F : CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
  check_cublaslt(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &a_mode, sizeof(a_mode)),
                 "a scale");
  check_cublaslt(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &b_mode, sizeof(b_mode)),
                 "b scale");
  if (has_bias) set_bias_epilogue(p->op);
  // The heuristic wants the scale (and bias) pointers of the modes it is asked about.
  set_pointers(p->op, ptr);
  check_cublaslt(cublasLtMatrixLayoutCreate(&p->a, CUDA_R_8F_E4M3, k, n, k), "layout a");
  check_cublaslt(cublasLtMatrixLayoutCreate(&p->b, CUDA_R_8F_E4M3, k, m, ldx), "layout b");
  check_cublaslt(cublasLtMatrixLayoutCreate(&p->d, out_f32 ? CUDA_R_32F : CUDA_R_16BF, n, m, ldy), "layout d");
  cublasLtMatmulPreference_t pref = deterministic_preference(workspace_bytes_);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(handle_, p->op, p->a, p->b, p->d, p->d, pref, 1, &result,
                                                          &found);
  cublasLtMatmulPreferenceDestroy(pref);
  // No algorithm (or a combination this cuBLASLt rejects): remembered, the caller falls back.
  p->ok = s == CUBLAS_STATUS_SUCCESS && found > 0;
  if (p->ok) p->algo = result.algo;
  return plans_.emplace(key, std::move(p)).first->second.get();
}

const float* Fp8Gemm::weight_scales(const Fp8Weight& w) {
  const bool block = w.gran == Fp8Gran::Block;
  if (w.gran == Fp8Gran::Channel || (block && w.scale_cols % 4 == 0)) return w.scales;
  auto it = scales_.find(w.scales);
  if (it != scales_.end()) return it->second.as<float>();
  ctx_.graphs.forbid_capture("laying out FP8 weight scales for cuBLASLt");
  const int64_t rows = block ? (w.n + kFp8Block - 1) / kFp8Block : 1;
  const int64_t cols = block ? padded_groups(w.scale_cols) : w.n;
  DeviceBuffer b = ctx_.memory.alloc(static_cast<size_t>(rows * cols) * 4, MemKind::Weights, "FP8 weight scales");
  if (block) {
    check_cuda(cudaMemsetAsync(b.get(), 0, b.bytes(), ctx_.stream), "FP8 weight scales");
    check_cuda(cudaMemcpy2DAsync(b.get(), static_cast<size_t>(cols) * 4, w.scales,
                                 static_cast<size_t>(w.scale_cols) * 4, static_cast<size_t>(w.scale_cols) * 4,
                                 static_cast<size_t>(rows), cudaMemcpyDeviceToDevice, ctx_.stream),
               "FP8 weight scales");
  } else {
    fp8_broadcast_scale(w.scales, b.as<float>(), w.n, ctx_.launch);
  }
  return scales_.emplace(w.scales, std::move(b)).first->second.as<float>();
}

bool Fp8Gemm::run(const Fp8X& x, const Fp8Weight& w, const bf16* bias, Mat y) {
  if (!eligible(x, w, y) || (bias && y.dt == Dt::F32)) return false;
  const bool block = w.gran == Fp8Gran::Block;
  const Key key{x.rows, w.n, w.k, x.stride, y.stride, y.dt == Dt::F32, bias != nullptr, block};
  if (!plans_.count(key)) ctx_.graphs.forbid_capture("planning a cuBLASLt FP8 GEMM");
  const Pointers ptr{weight_scales(w), x.scales, bias};
  Plan* p = plan(key, ptr);
  if (!p->ok) return false;
  set_pointers(p->op, ptr);
  const float alpha = 1.0f, beta = 0.0f;
  check_cublaslt(cublasLtMatmul(handle_, p->op, &alpha, w.data, p->a, x.q, p->b, &beta, y.data, p->d, y.data, p->d,
                                &p->algo, workspace_.get(), workspace_bytes_, ctx_.stream),
                 "matmul");
  return true;
}

}  // namespace inferdesk::cuda
