#include "cuda/backend/gemm.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "core/util/error.h"
#include "cuda/backend/cublaslt_util.h"

namespace inferdesk::cuda {

namespace {

constexpr int64_t kTunedMaxRows = 256;

// Largest power of two (at most 256) that divides the address.
uint32_t alignment_of(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t low = a & (~a + 1);
  return low == 0 || low > 256 ? 256u : static_cast<uint32_t>(low);
}

}  // namespace

struct Gemm::Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (op) cublasLtMatmulDescDestroy(op);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (d) cublasLtMatrixLayoutDestroy(d);
  }
};

Gemm::Gemm(bool log) : log_(log) {
  check_cublaslt(cublasLtCreate(&handle_), "create");
  if (cudaMalloc(&workspace_, workspace_bytes_) != cudaSuccess) {
    cudaGetLastError();
    cublasLtDestroy(handle_);
    throw Error(ErrorCode::OutOfMemory, "no GPU memory for the cuBLASLt workspace");
  }
}

Gemm::~Gemm() {
  plans_.clear();
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublasLtDestroy(handle_);
}

// Row-major y[M,N] = x[M,K] W[N,K]^T is column-major y^T[N,M] = (W^T)^T x^T: A = W seen as a
// K x N column-major matrix (transposed), B = x seen as K x M (ld = x.stride), D = y^T (ld =
// y.stride). The bias epilogue adds bias[n] to row n of D, i.e. to output feature n.
// The chosen configuration too (cublasLtMatmulTile_t / cublasLtMatmulStages_t / cluster shape
// enumerators, split K), to compare with our own kernels' tiling.
void Gemm::log_choice(const Plan& p, int64_t m, int64_t n, int64_t k, bool out_f32, int found, float ms) {
  auto cfg = [&](cublasLtMatmulAlgoConfigAttributes_t a) {
    uint32_t v = 0;
    size_t written = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&p.algo, a, &v, sizeof(v), &written);
    return v;
  };
  std::fprintf(stderr,
               "gemm M=%lld N=%lld K=%lld %s: %d candidates, best %.1f us (%.0f GB/s of W); algo %u tile %u "
               "stages %u split-k %u swizzle %u cluster %u\n",
               static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k),
               out_f32 ? "f32" : "bf16", found, ms * 1e3,
               2.0 * static_cast<double>(n) * static_cast<double>(k) / (ms * 1e-3) / 1e9, cfg(CUBLASLT_ALGO_CONFIG_ID),
               cfg(CUBLASLT_ALGO_CONFIG_TILE_ID), cfg(CUBLASLT_ALGO_CONFIG_STAGES_ID),
               cfg(CUBLASLT_ALGO_CONFIG_SPLITK_NUM), cfg(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING),
               cfg(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID));
}

Gemm::Plan& Gemm::plan(const Key& key, const Mat& x, const bf16* w, const bf16* bias, const Mat& y,
                       cudaStream_t stream) {
  auto it = plans_.find(key);
  if (it != plans_.end()) return *it->second;
  const auto [m, n, k, ldx, ldy, out_f32, has_bias, align, tune] = key;
  auto p = std::make_unique<Plan>();
  check_cublaslt(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  check_cublaslt(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)), "transa");
  check_cublaslt(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)), "transb");
  if (has_bias) set_bias_epilogue(p->op);
  check_cublaslt(cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16BF, k, n, k), "layout a");
  check_cublaslt(cublasLtMatrixLayoutCreate(&p->b, CUDA_R_16BF, k, m, ldx), "layout b");
  check_cublaslt(cublasLtMatrixLayoutCreate(&p->d, out_f32 ? CUDA_R_32F : CUDA_R_16BF, n, m, ldy), "layout d");
  cublasLtMatmulPreference_t pref = deterministic_preference(workspace_bytes_);
  // cuBLASLt assumes 256-byte aligned operands unless told otherwise.
  for (const auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof(align));
  constexpr int kCandidates = 12;
  cublasLtMatmulHeuristicResult_t results[kCandidates] = {};
  int found = 0;
  const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(handle_, p->op, p->a, p->b, p->d, p->d, pref, kCandidates,
                                                          results, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  check_cublaslt(s, "heuristic");
  if (found == 0)
    throw Error(ErrorCode::Internal, "cuBLASLt has no algorithm for a " + std::to_string(m) + "x" + std::to_string(n) +
                                         "x" + std::to_string(k) + " GEMM");
  p->algo = results[0].algo;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing(stream, &capture);
  // Autotune only the small-M shapes of decode steps (replayed in graphs thousands of times);
  // prefill and mixed steps have ever-changing M and take the heuristic's choice (timing every
  // new M cost more than it saved: offline throughput fell by a fifth).
  if (tune && found > 1 && capture == cudaStreamCaptureStatusNone && m <= kTunedMaxRows) {
    // Time each candidate on the real operands (y is overwritten by the real run afterwards).
    if (bias)
      check_cublaslt(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)),
                     "bias pointer");
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    const float alpha = 1.0f, beta = 0.0f;
    float best = 1e30f;
    for (int i = 0; i < found; ++i) {
      if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
      auto once = [&] {
        return cublasLtMatmul(handle_, p->op, &alpha, w, p->a, x.data, p->b, &beta, y.data, p->d, y.data, p->d,
                              &results[i].algo, workspace_, workspace_bytes_, stream);
      };
      if (once() != CUBLAS_STATUS_SUCCESS) continue;
      cudaEventRecord(e0, stream);
      constexpr int kReps = 5;
      bool ok = true;
      for (int r = 0; r < kReps && ok; ++r) ok = once() == CUBLAS_STATUS_SUCCESS;
      cudaEventRecord(e1, stream);
      cudaEventSynchronize(e1);
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      if (ok && ms < best) {
        best = ms;
        p->algo = results[i].algo;
      }
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    if (log_) log_choice(*p, m, n, k, out_f32, found, best / 5);
  }
  return *plans_.emplace(key, std::move(p)).first->second;
}

void Gemm::run(const Mat& x, const bf16* w, int64_t n, int64_t k, const bf16* bias, Mat y, cudaStream_t stream,
               bool autotune) {
  uint32_t align = 256;
  for (const void* p : {static_cast<const void*>(x.data), static_cast<const void*>(w), static_cast<const void*>(y.data),
                        static_cast<const void*>(bias)})
    if (p) align = std::min(align, alignment_of(p));
  const Key key{x.rows, n, k, x.stride, y.stride, y.dt == Dt::F32 ? 1 : 0, bias != nullptr, align, autotune};
  Plan& p = plan(key, x, w, bias, y, stream);
  if (bias)
    check_cublaslt(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)),
                   "bias pointer");
  const float alpha = 1.0f, beta = 0.0f;
  check_cublaslt(cublasLtMatmul(handle_, p.op, &alpha, w, p.a, x.data, p.b, &beta, y.data, p.d, y.data, p.d, &p.algo,
                                workspace_, workspace_bytes_, stream),
                 "matmul");
}

}  // namespace inferdesk::cuda
