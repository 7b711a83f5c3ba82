// The cuBLASLt set-up both GEMM wrappers share (gemm.cu: BF16, fp8_gemm.cu: FP8).
#pragma once

#include <cublasLt.h>

#include <cstddef>

namespace inferdesk::cuda {

// Throws Error(Internal) "cuBLASLt <what> failed: <status>" unless s is CUBLAS_STATUS_SUCCESS.
void check_cublaslt(cublasStatus_t s, const char* what);

// A BF16 bias added to each output row in the epilogue of `op`.
void set_bias_epilogue(cublasLtMatmulDesc_t op);

// A preference for at most `workspace_bytes` of workspace and no split-K reduction done in place
// in the output (atomics), so the same step gives the same bits every time (reproducible
// generations). The caller destroys it (cublasLtMatmulPreferenceDestroy).
cublasLtMatmulPreference_t deterministic_preference(const size_t& workspace_bytes);

}  // namespace inferdesk::cuda
