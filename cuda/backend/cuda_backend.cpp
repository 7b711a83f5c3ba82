// CudaBackend: composes the parts (context.h, kernel_policy.h, step_upload.h, graph_runner.h,
// gpu_sampler.h, moe_runner.h, step_timer.h, weight_upload.h, kv_cache.h) behind the Backend seam,
// and runs a step: begin_step decides the step's shape and graph, the model's ops run (or the graph
// replays at end_step), then sampling. The ops themselves are in cuda_ops.cpp.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>

#include "core/util/error.h"
#include "cuda/backend/cuda_backend_impl.h"
#include "cuda/kernels/attention.h"
#include "cuda/kernels/elementwise.h"
#include "cuda/kernels/fp8_linear.h"

namespace inferdesk {

namespace cuda {

CudaBackend::CudaBackend(const CudaBackendOptions& o)
    : ctx_(o),
      timer_(ctx_.stream, o.tuning.step_timing),
      policy_(ctx_, o),
      weights_(ctx_),
      steps_(ctx_),
      sampler_(ctx_, timer_, o.tuning.sampling_copy_stream),
      moe_(ctx_, policy_.gemm(), o),
      rope_tables_(ctx_) {
  int major = 0, minor = 0;
  check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ctx_.device), "querying the GPU");
  check_cuda(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, ctx_.device), "querying the GPU");
  compute_capability_ = major * 10 + minor;
}

// Nothing queued on any of the backend's streams may still use the memory the parts free.
CudaBackend::~CudaBackend() { cudaDeviceSynchronize(); }

Buffer CudaBackend::alloc(DType dtype, int64_t rows, int64_t cols) {
  DeviceBuffer b = ctx_.memory.alloc(static_cast<size_t>(rows * cols) * dtype_size(dtype), MemKind::Activations,
                                     "activations");
  void* p = b.get();
  return Buffer(Tensor{p, dtype, rows, cols, cols}, std::move(b).share());
}

Buffer CudaBackend::load_weight(const HostTensor& host, int64_t, int64_t cols) {
  return weights_.load_rows({host}, cols);
}

Buffer CudaBackend::load_weight_rows(const std::vector<HostTensor>& parts, int64_t cols) {
  return weights_.load_rows(parts, cols);
}

// Random fills are how dummy weights are made: they count as weights.
void CudaBackend::fill_random(Tensor t, uint64_t seed, float scale) {
  if (t.dtype == DType::F8E4M3)
    fill_random_fp8(static_cast<uint8_t*>(t.data), t.rows, t.cols, t.stride, seed, scale, ctx_.launch);
  else
    cuda::fill_random(as_mat(t), seed, scale, ctx_.launch);
  ctx_.memory.recount(t.rows * t.cols * static_cast<int64_t>(t.element_size()), MemKind::Activations, MemKind::Weights);
}

// E4M3 needs the FP8 conversion instructions of sm_89 (Ada) and later.
bool CudaBackend::supports_kv_dtype(KvCacheDtype d) const {
  return d == KvCacheDtype::Auto || (d == KvCacheDtype::Fp8 && compute_capability_ >= 89);
}

void CudaBackend::init_kv_cache(const KvCacheShape& shape) {
  if (!supports_kv_dtype(shape.dtype))
    throw Error(ErrorCode::Unsupported, "an FP8 KV cache needs a GPU of compute capability 8.9 or later; this one is " +
                                            std::to_string(compute_capability_ / 10) + "." +
                                            std::to_string(compute_capability_ % 10));
  check_kv_scales(shape);
  kv_.init(ctx_, shape);
}

int64_t CudaBackend::kv_cache_budget(double utilization) const {
  size_t free_b = 0, total_b = 0;
  check_cuda(cudaMemGetInfo(&free_b, &total_b), "querying GPU memory");
  // Headroom for what is allocated after the cache (sampling buffers, graphs, cuBLASLt) and the
  // MoE scratch the grouped and large expert paths may still allocate.
  constexpr int64_t kHeadroom = 768LL << 20;
  const int64_t used = static_cast<int64_t>(total_b - free_b);
  const int64_t allowed = static_cast<int64_t>(utilization * static_cast<double>(total_b));
  return std::max<int64_t>(-1, std::min<int64_t>(allowed - used, static_cast<int64_t>(free_b)) - kHeadroom -
                                   moe_.reserved_bytes());
}

MemoryInfo CudaBackend::memory_info() const {
  MemoryInfo m;
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
    m.device_total = static_cast<int64_t>(total_b);
    m.device_used = static_cast<int64_t>(total_b - free_b);
  }
  m.weights = ctx_.memory.bytes(MemKind::Weights);
  m.kv_cache = ctx_.memory.bytes(MemKind::KvCache);
  m.activations = ctx_.memory.bytes(MemKind::Activations);
  return m;
}

void CudaBackend::ensure_attention_workspace(int32_t num_seqs, int32_t num_heads, int32_t head_dim, int32_t splits) {
  const size_t need = decode_workspace_bytes(num_seqs, num_heads, head_dim, splits);
  const size_t counters = need > 0 ? static_cast<size_t>(int64_t{num_seqs} * num_heads) * 4 : 0;
  if (need <= attn_workspace_.bytes() && counters <= split_counters_.bytes()) return;
  ctx_.graphs.forbid_capture("growing the attention workspace");
  ctx_.memory.grow(attn_workspace_, need, need, MemKind::Other, "attention workspace", ctx_.stream);
  if (ctx_.memory.grow(split_counters_, counters, counters, MemKind::Other, "attention counters", ctx_.stream))
    check_cuda(cudaMemsetAsync(split_counters_.get(), 0, split_counters_.bytes(), ctx_.stream),
               "clearing the attention counters");  // the kernels leave them zero
  ctx_.graphs.invalidate();
}

// ---------------------------------------------------------------------------------- steps

CudaBackend::StepShape CudaBackend::classify(const StepInput& step) {
  StepShape s;
  const int32_t n = step.num_tokens();
  const auto S = static_cast<int32_t>(step.seqs.size());
  bool decode = S == n && static_cast<int32_t>(step.logit_rows.size()) == n;
  for (int32_t i = 0; i < S; ++i) {
    const StepSeq& q = step.seqs[i];
    s.max_query_len = std::max(s.max_query_len, q.query_len);
    // (logit_rows has one entry per sequence only while `decode` still holds.)
    if (q.query_len != 1 || q.query_start != i || (decode && step.logit_rows[i] != i)) decode = false;
  }
  s.decode_only = decode;
  s.rows = n;
  s.num_seqs = S;
  return s;
}

// A decode step: pad it to a graph bucket, upload its metadata, and replay that bucket's graph or
// run the ops (captured on the bucket's second step). Any other step runs its ops as they come.
StepPlan CudaBackend::begin_step(const StepInput& step) {
  ctx_.graphs.abort();  // a previous step that failed mid-capture
  policy_.begin_step();
  timer_.step_begun();
  shape_ = classify(step);
  const int bucket = shape_.decode_only && num_heads_seen_ > 0
                         ? ctx_.graphs.bucket(shape_.rows, moe_.max_capturable_rows())
                         : 0;
  if (bucket) shape_.rows = shape_.num_seqs = bucket;
  steps_.upload(step, shape_.rows, shape_.num_seqs);
  if (step.tokens_from_last_sample) take_chained_tokens(step);
  if (shape_.decode_only) shape_.splits = policy_.decode_splits(shape_.num_seqs, kv_.shape().num_kv_heads);
  const int32_t logit_rows = shape_.decode_only ? shape_.rows : static_cast<int32_t>(step.logit_rows.size());
  if (!bucket) return StepPlan{shape_.rows, logit_rows, false};
  // The attention workspace must exist before a capture (no allocation inside one).
  ensure_attention_workspace(shape_.num_seqs, num_heads_seen_, kv_.shape().head_dim, shape_.splits);
  return StepPlan{shape_.rows, logit_rows, ctx_.graphs.begin(bucket)};
}

// Overlapped decode: the step's tokens are the last sampling's, still on the device (it ran
// earlier in the stream); the host wrote -1 there.
void CudaBackend::take_chained_tokens(const StepInput& step) {
  const int32_t n = step.num_tokens();
  if (sampler_.last_tokens() == nullptr || sampler_.last_rows() != n || !shape_.decode_only)
    throw Error(ErrorCode::Internal, "a chained step must be a decode step over the rows of the last sampling (" +
                                         std::to_string(sampler_.last_rows()) + " rows, this step " +
                                         std::to_string(n) + ")");
  steps_.take_tokens(sampler_.last_tokens(), n);
  ++chained_steps_;
}

void CudaBackend::end_step() {
  ctx_.graphs.end();
  steps_.forward_enqueued();
  timer_.forward_enqueued();
}

void CudaBackend::sample(const Tensor& logits, const std::vector<SampleRow>& rows, std::vector<SampledToken>& out) {
  if (sampler_.pending()) throw Error(ErrorCode::Internal, "sample() while overlapped samplings are outstanding");
  sampler_.launch(logits, rows);
  sampler_.collect(out);
}

void CudaBackend::to_host(const Tensor& t, float* dst) {
  policy_.settled(t);
  const size_t es = t.element_size();
  const size_t row_bytes = static_cast<size_t>(t.cols) * es;
  auto* h = static_cast<char*>(weights_.host_staging(std::max<size_t>(row_bytes * t.rows, 1)));
  check_cuda(cudaMemcpy2DAsync(h, row_bytes, t.data, static_cast<size_t>(t.stride) * es, row_bytes,
                               static_cast<size_t>(t.rows), cudaMemcpyDeviceToHost, ctx_.stream),
             "copying to the host");
  synchronize();
  const int64_t n = t.rows * t.cols;
  if (t.dtype == DType::F32) {
    std::memcpy(dst, h, static_cast<size_t>(n) * 4);
  } else if (t.dtype == DType::BF16) {
    const auto* b = reinterpret_cast<const uint16_t*>(h);
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t u = static_cast<uint32_t>(b[i]) << 16;
      std::memcpy(dst + i, &u, 4);
    }
  } else if (t.dtype == DType::I32) {
    const auto* b = reinterpret_cast<const int32_t*>(h);
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(b[i]);
  } else {
    throw Error(ErrorCode::Internal, "to_host: unsupported dtype");
  }
}

}  // namespace cuda

bool cuda_backend_available(std::string* reason) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (reason) *reason = std::string("no usable CUDA driver or GPU: ") + cudaGetErrorString(e);
    return false;
  }
  if (n == 0) {
    if (reason) *reason = "the CUDA driver reports no GPU";
    return false;
  }
  return true;
}

std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& options) {
  return std::make_unique<cuda::CudaBackend>(options);
}

CudaMoePathCounts cuda_moe_path_counts(const Backend& backend) {
  return cuda::as_cuda_backend(backend, "cuda_moe_path_counts").moe_path_counts();
}

int64_t cuda_chained_steps(const Backend& backend) {
  return cuda::as_cuda_backend(backend, "cuda_chained_steps").chained_steps();
}

int64_t cuda_fused_norms(const Backend& backend) {
  return cuda::as_cuda_backend(backend, "cuda_fused_norms").fused_norms();
}

}  // namespace inferdesk
