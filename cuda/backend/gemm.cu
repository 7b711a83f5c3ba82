#include "cuda/backend/gemm.h"

#include <string>

#include "core/util/error.h"

namespace inferdesk::cuda {

namespace {

void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Error(ErrorCode::Internal,
                std::string("cuBLASLt ") + what + " failed: " + cublasLtGetStatusString(s));
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

Gemm::Gemm() {
  check(cublasLtCreate(&handle_), "create");
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
Gemm::Plan& Gemm::plan(const Key& key) {
  auto it = plans_.find(key);
  if (it != plans_.end()) return *it->second;
  const auto [m, n, k, ldx, ldy, out_f32, has_bias] = key;
  auto p = std::make_unique<Plan>();
  check(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  check(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)), "transa");
  check(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)), "transb");
  if (has_bias) {
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    check(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)),
          "epilogue");
    const cudaDataType_t bt = CUDA_R_16BF;
    check(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof(bt)),
          "bias type");
  }
  check(cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16BF, k, n, k), "layout a");
  check(cublasLtMatrixLayoutCreate(&p->b, CUDA_R_16BF, k, m, ldx), "layout b");
  check(cublasLtMatrixLayoutCreate(&p->d, out_f32 ? CUDA_R_32F : CUDA_R_16BF, n, m, ldy), "layout d");
  cublasLtMatmulPreference_t pref = nullptr;
  check(cublasLtMatmulPreferenceCreate(&pref), "preference");
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                       &workspace_bytes_, sizeof(workspace_bytes_));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(handle_, p->op, p->a, p->b, p->d, p->d,
                                                          pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  check(s, "heuristic");
  if (found == 0)
    throw Error(ErrorCode::Internal, "cuBLASLt has no algorithm for a " + std::to_string(m) + "x" +
                                         std::to_string(n) + "x" + std::to_string(k) + " GEMM");
  p->algo = result.algo;
  return *plans_.emplace(key, std::move(p)).first->second;
}

void Gemm::run(const Mat& x, const bf16* w, int64_t n, int64_t k, const bf16* bias, Mat y,
               cudaStream_t stream) {
  const Key key{x.rows, n, k, x.stride, y.stride, y.dt == Dt::F32 ? 1 : 0, bias != nullptr};
  Plan& p = plan(key);
  if (bias)
    check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)),
          "bias pointer");
  const float alpha = 1.0f, beta = 0.0f;
  check(cublasLtMatmul(handle_, p.op, &alpha, w, p.a, x.data, p.b, &beta, y.data, p.d, y.data, p.d,
                       &p.algo, workspace_, workspace_bytes_, stream),
        "matmul");
}

}  // namespace inferdesk::cuda
