#include "cuda/backend/gemm.h"

#include <algorithm>
#include <vector>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/util/error.h"

namespace inferdesk::cuda {

namespace {

constexpr int64_t kTunedMaxRows = 256;

// Largest power of two (at most 256) that divides the address.
uint32_t alignment_of(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t low = a & (~a + 1);
  return low == 0 || low > 256 ? 256u : static_cast<uint32_t>(low);
}

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

GemmTuning GemmTuning::from_env() {
  GemmTuning t;
  if (const char* e = std::getenv("INFERDESK_GEMM_TUNE")) {
    const std::string v = e;
    if (v == "legacy") {
      t.candidates = 12;
      t.flush_l2 = false;
    } else if (v == "exhaustive") {
      t.exhaustive = true;
    } else if (v == "warm") {
      t.flush_l2 = false;
    }
  }
  return t;
}

Gemm::Gemm(GemmTuning tuning) : tuning_(tuning) {
  check(cublasLtCreate(&handle_), "create");
  if (cudaMalloc(&workspace_, workspace_bytes_) != cudaSuccess) {
    cudaGetLastError();
    cublasLtDestroy(handle_);
    throw Error(ErrorCode::OutOfMemory, "no GPU memory for the cuBLASLt workspace");
  }
}

Gemm::~Gemm() {
  plans_.clear();
  for (cudaEvent_t e : ev_)
    if (e) cudaEventDestroy(e);
  if (flush_buf_) cudaFree(flush_buf_);
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublasLtDestroy(handle_);
}

// Row-major y[M,N] = x[M,K] W[N,K]^T is column-major y^T[N,M] = (W^T)^T x^T: A = W seen as a
// K x N column-major matrix (transposed), B = x seen as K x M (ld = x.stride), D = y^T (ld =
// y.stride). The bias epilogue adds bias[n] to row n of D, i.e. to output feature n.
Gemm::Plan& Gemm::plan(const Key& key, const Mat& x, const bf16* w, const bf16* bias, const Mat& y,
                       cudaStream_t stream) {
  auto it = plans_.find(key);
  if (it != plans_.end()) return *it->second;
  const auto [m, n, k, ldx, ldy, out_f32, has_bias, align, tune] = key;
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
  // Deterministic results: no split-K reduction done in place in the output (atomics), so the
  // same step gives the same bits every time (reproducible generations).
  const uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_MASK & ~CUBLASLT_REDUCTION_SCHEME_INPLACE;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes,
                                       sizeof(schemes));
  // cuBLASLt assumes 256-byte aligned operands unless told otherwise.
  for (const auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof(align));
  const int wanted = std::clamp(tuning_.candidates, 1, 64);
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(wanted));
  int found = 0;
  const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(handle_, p->op, p->a, p->b, p->d, p->d,
                                                          pref, wanted, results.data(), &found);
  check(s, "heuristic");
  if (found == 0) {
    cublasLtMatmulPreferenceDestroy(pref);
    throw Error(ErrorCode::Internal, "cuBLASLt has no algorithm for a " + std::to_string(m) + "x" +
                                         std::to_string(n) + "x" + std::to_string(k) + " GEMM");
  }
  p->algo = results[0].algo;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing(stream, &capture);
  // Autotune only the small-M shapes of decode steps (replayed in graphs thousands of times);
  // prefill and mixed steps have ever-changing M and take the heuristic's choice (timing every
  // new M cost more than it saved: offline throughput fell by a fifth).
  if (tune && capture == cudaStreamCaptureStatusNone && m <= kTunedMaxRows) {
    std::vector<cublasLtMatmulAlgo_t> algos;
    for (int i = 0; i < found; ++i)
      if (results[static_cast<size_t>(i)].state == CUBLAS_STATUS_SUCCESS)
        algos.push_back(results[static_cast<size_t>(i)].algo);
    if (tuning_.exhaustive) {
      std::vector<cublasLtMatmulAlgo_t> more = candidates(*p, pref, out_f32, m);
      algos.insert(algos.end(), more.begin(), more.end());
    }
    if (bias)
      check(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)),
            "bias pointer");
    if (tuning_.flush_l2 && !flush_buf_) {
      int l2 = 0, dev = 0;
      cudaGetDevice(&dev);
      cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
      flush_bytes_ = static_cast<size_t>(std::max(l2, 1 << 20)) * 2;
      if (cudaMalloc(&flush_buf_, flush_bytes_) != cudaSuccess) {  // tune with a warm L2 then
        cudaGetLastError();
        flush_buf_ = nullptr;
      }
    }
    // A quick pass over every candidate, then the best few again with more runs.
    const int quick = algos.size() > 24 ? 2 : 5;
    std::vector<std::pair<float, size_t>> timed;
    for (size_t i = 0; i < algos.size(); ++i) {
      const float us = time_algo(*p, algos[i], x, w, y, quick, stream);
      if (us >= 0) timed.push_back({us, i});
    }
    std::sort(timed.begin(), timed.end());
    if (timed.size() > 4 && quick < 5) {
      timed.resize(4);
      for (auto& [us, i] : timed) us = time_algo(*p, algos[i], x, w, y, 7, stream);
      std::sort(timed.begin(), timed.end());
    }
    if (!timed.empty()) p->algo = algos[timed[0].second];
    if (flush_buf_) {
      cudaFree(flush_buf_);
      flush_buf_ = nullptr;
    }
    if (const char* log = std::getenv("INFERDESK_GEMM_LOG"); log && *log == '1' && !timed.empty())
      std::fprintf(stderr,
                   "gemm M=%lld N=%lld K=%lld %s: %zu candidates (%d heuristic), best %.1f us "
                   "(%.0f GB/s of W)%s\n",
                   static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k),
                   out_f32 ? "f32" : "bf16", algos.size(), found, timed[0].first,
                   2.0 * static_cast<double>(n) * static_cast<double>(k) / (timed[0].first * 1e-6) / 1e9,
                   tuning_.flush_l2 ? ", cold L2" : "");
  }
  cublasLtMatmulPreferenceDestroy(pref);
  return *plans_.emplace(key, std::move(p)).first->second;
}

void Gemm::flush_l2(cudaStream_t stream) {
  if (flush_buf_) cudaMemsetAsync(flush_buf_, static_cast<int>(++flush_byte_ & 0xff), flush_bytes_, stream);
}

float Gemm::time_algo(Plan& p, const cublasLtMatmulAlgo_t& algo, const Mat& x, const bf16* w,
                      const Mat& y, int reps, cudaStream_t stream) {
  for (cudaEvent_t& e : ev_)
    if (!e && cudaEventCreate(&e) != cudaSuccess) return -1;
  const float alpha = 1.0f, beta = 0.0f;
  auto once = [&] {
    return cublasLtMatmul(handle_, p.op, &alpha, w, p.a, x.data, p.b, &beta, y.data, p.d, y.data,
                          p.d, &algo, workspace_, workspace_bytes_, stream);
  };
  if (once() != CUBLAS_STATUS_SUCCESS) {
    cudaGetLastError();
    return -1;
  }
  std::vector<float> us;
  for (int r = 0; r < reps; ++r) {
    flush_l2(stream);
    cudaEventRecord(ev_[0], stream);
    if (once() != CUBLAS_STATUS_SUCCESS) return -1;
    cudaEventRecord(ev_[1], stream);
    if (cudaEventSynchronize(ev_[1]) != cudaSuccess) {
      cudaGetLastError();
      return -1;
    }
    float ms = 0;
    cudaEventElapsedTime(&ms, ev_[0], ev_[1]);
    us.push_back(ms * 1e3f);
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

std::vector<cublasLtMatmulAlgo_t> Gemm::candidates(Plan& p, cublasLtMatmulPreference_t,
                                                   bool out_f32, int64_t m) {
  const cudaDataType_t dt = out_f32 ? CUDA_R_32F : CUDA_R_16BF;
  int ids[256];
  int num_ids = 0;
  std::vector<cublasLtMatmulAlgo_t> out;
  if (cublasLtMatmulAlgoGetIds(handle_, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, dt,
                               dt, 256, ids, &num_ids) != CUBLAS_STATUS_SUCCESS)
    return out;
  auto cap_array = [](const cublasLtMatmulAlgo_t& a, cublasLtMatmulAlgoCapAttributes_t attr) {
    std::vector<uint32_t> v;
    size_t bytes = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(&a, attr, nullptr, 0, &bytes) != CUBLAS_STATUS_SUCCESS ||
        bytes == 0)
      return std::vector<uint32_t>{0};  // undefined: the algorithm's default
    v.resize(bytes / sizeof(uint32_t));
    if (cublasLtMatmulAlgoCapGetAttribute(&a, attr, v.data(), bytes, &bytes) != CUBLAS_STATUS_SUCCESS)
      return std::vector<uint32_t>{0};
    return v;
  };
  constexpr size_t kMaxConfigs = 2000;
  for (int i = 0; i < num_ids && out.size() < kMaxConfigs; ++i) {
    cublasLtMatmulAlgo_t base;
    if (cublasLtMatmulAlgoInit(handle_, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, dt,
                               dt, ids[i], &base) != CUBLAS_STATUS_SUCCESS)
      continue;
    const std::vector<uint32_t> tiles = cap_array(base, CUBLASLT_ALGO_CAP_TILE_IDS);
    const std::vector<uint32_t> stages = cap_array(base, CUBLASLT_ALGO_CAP_STAGES_IDS);
    int32_t splitk_ok = 0, custom_max = 0;
    uint32_t schemes = 0, swizzle_ok = 0;
    size_t w = 0;
    cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &splitk_ok, sizeof(splitk_ok), &w);
    cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &schemes, sizeof(schemes), &w);
    cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT, &swizzle_ok, sizeof(swizzle_ok), &w);
    cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX, &custom_max, sizeof(custom_max), &w);
    // Split K only through a workspace (never in place: deterministic results, see plan()).
    std::vector<std::pair<uint32_t, uint32_t>> splits = {{1, CUBLASLT_REDUCTION_SCHEME_NONE}};
    if (splitk_ok)
      for (uint32_t sk : {2u, 3u, 4u, 6u, 8u, 12u, 16u})
        for (uint32_t sch : {uint32_t{CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE},
                             uint32_t{CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE}})
          if (schemes & sch) splits.push_back({sk, sch});
    for (uint32_t tile : tiles)
      for (uint32_t stage : stages)
        for (auto [sk, sch] : splits)
          for (uint32_t swz = 0; swz <= std::min<uint32_t>(swizzle_ok, 1); ++swz)
            for (int32_t opt = 0; opt <= std::min(custom_max, 3); ++opt) {
              cublasLtMatmulAlgo_t a = base;
              cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile));
              cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stage, sizeof(stage));
              cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &sk, sizeof(sk));
              cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &sch, sizeof(sch));
              cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof(swz));
              const uint32_t o = static_cast<uint32_t>(opt);
              cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &o, sizeof(o));
              cublasLtMatmulHeuristicResult_t r{};
              if (cublasLtMatmulAlgoCheck(handle_, p.op, p.a, p.b, p.d, p.d, &a, &r) != CUBLAS_STATUS_SUCCESS ||
                  r.state != CUBLAS_STATUS_SUCCESS || r.workspaceSize > workspace_bytes_)
                continue;
              out.push_back(a);
              if (out.size() >= kMaxConfigs) return out;
            }
  }
  (void)m;
  return out;
}

void Gemm::run(const Mat& x, const bf16* w, int64_t n, int64_t k, const bf16* bias, Mat y,
               cudaStream_t stream, bool autotune) {
  uint32_t align = 256;
  for (const void* p : {static_cast<const void*>(x.data), static_cast<const void*>(w),
                        static_cast<const void*>(y.data), static_cast<const void*>(bias)})
    if (p) align = std::min(align, alignment_of(p));
  const Key key{x.rows, n, k, x.stride, y.stride, y.dt == Dt::F32 ? 1 : 0, bias != nullptr, align,
                autotune};
  Plan& p = plan(key, x, w, bias, y, stream);
  if (bias)
    check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)),
          "bias pointer");
  const float alpha = 1.0f, beta = 0.0f;
  check(cublasLtMatmul(handle_, p.op, &alpha, w, p.a, x.data, p.b, &beta, y.data, p.d, y.data, p.d,
                       &p.algo, workspace_, workspace_bytes_, stream),
        "matmul");
}

}  // namespace inferdesk::cuda
