#include "cuda/backend/cublaslt_util.h"

#include <cstdint>
#include <string>

#include "core/util/error.h"

namespace inferdesk::cuda {

void check_cublaslt(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Error(ErrorCode::Internal, std::string("cuBLASLt ") + what + " failed: " + cublasLtGetStatusString(s));
}

void set_bias_epilogue(cublasLtMatmulDesc_t op) {
  const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
  check_cublaslt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)), "epilogue");
  const cudaDataType_t bt = CUDA_R_16BF;
  check_cublaslt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof(bt)), "bias type");
}

cublasLtMatmulPreference_t deterministic_preference(const size_t& workspace_bytes) {
  cublasLtMatmulPreference_t pref = nullptr;
  check_cublaslt(cublasLtMatmulPreferenceCreate(&pref), "preference");
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                       sizeof(workspace_bytes));
  const uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_MASK & ~CUBLASLT_REDUCTION_SCHEME_INPLACE;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes, sizeof(schemes));
  return pref;
}

}  // namespace inferdesk::cuda
