// CudaBackend: device memory, weight upload, the KV cache, step metadata and CUDA graphs. The ops
// themselves are in cuda_ops.cpp, sampling in cuda_sample.cpp.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/util/error.h"
#include "cuda/backend/cuda_backend_impl.h"

namespace inferdesk {

namespace cuda {

void check_cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();  // clear the sticky-free error state where possible
  const ErrorCode code = e == cudaErrorMemoryAllocation ? ErrorCode::OutOfMemory : ErrorCode::Internal;
  throw Error(code, std::string(what) + ": " + cudaGetErrorString(e));
}

PinnedBuffer::~PinnedBuffer() {
  if (p_) cudaFreeHost(p_);
}

void* PinnedBuffer::get(size_t bytes) {
  if (bytes <= size_) return p_;
  if (p_) cudaFreeHost(p_);
  p_ = nullptr;
  size_ = 0;
  check_cuda(cudaHostAlloc(&p_, bytes, cudaHostAllocDefault), "pinned host memory");
  size_ = bytes;
  return p_;
}

Mat as_mat(const Tensor& t) {
  Mat m;
  m.data = t.data;
  m.rows = t.rows;
  m.cols = t.cols;
  m.stride = t.stride;
  if (t.dtype == DType::F32)
    m.dt = Dt::F32;
  else if (t.dtype == DType::BF16)
    m.dt = Dt::BF16;
  else
    throw Error(ErrorCode::Internal, std::string("CUDA op on a tensor of dtype ") +
                                         dtype_name(t.dtype) + " (F32 or BF16 expected)");
  return m;
}

namespace {
constexpr size_t kStagingChunk = 64u << 20;
const std::vector<int> kDefaultBuckets = {1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256};
}  // namespace

CudaBackend::CudaBackend(const CudaBackendOptions& options) : options_(options) {
  std::string why;
  if (!cuda_backend_available(&why)) throw Error(ErrorCode::Unsupported, why);
  check_cuda(cudaSetDevice(options_.device), "selecting the GPU");
  check_cuda(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, options_.device),
             "querying the GPU");
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating a stream");
  for (auto& e : staging_done_) check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "event");
  check_cuda(cudaEventCreateWithFlags(&step_uploaded_, cudaEventDisableTiming), "event");
  check_cuda(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking), "creating a stream");
  if (const char* u = std::getenv("INFERDESK_UPLOAD_STREAM"); !(u && *u == '0')) {
    check_cuda(cudaStreamCreateWithFlags(&upload_stream_, cudaStreamNonBlocking), "creating a stream");
    check_cuda(cudaEventCreateWithFlags(&forward_done_, cudaEventDisableTiming), "event");
  }
  for (cudaEvent_t* group : {sample_done_, sample_params_up_, sample_computed_})
    for (int i = 0; i < 2; ++i)
      check_cuda(cudaEventCreateWithFlags(&group[i], cudaEventDisableTiming), "event");
  if (options_.graph_batch_sizes.empty()) options_.graph_batch_sizes = kDefaultBuckets;
  std::sort(options_.graph_batch_sizes.begin(), options_.graph_batch_sizes.end());
  gemm_ = std::make_unique<Gemm>();
  launch_ = Launch{stream_, options_.pdl};
  // Switches for tuning experiments (benchmarks compare them with the defaults in one run;
  // docs/PERF.md has the figures behind each default):
  //   INFERDESK_DECODE_WAVES, INFERDESK_DECODE_MIN_KEYS: decode-attention splits (decode_splits);
  //   INFERDESK_DECODE_MMA=0: many-block grids on the CUDA-core pipeline instead of DecodeLoad::Mma;
  //   INFERDESK_DECODE_HEADS_PER_BLOCK, INFERDESK_DECODE_MAX_HEADS: query heads per attention
  //     block for few-block grids (default 2) and for all (default 8);
  //   INFERDESK_SAMPLING_COPY_STREAM=0: sampling copies on the compute stream;
  //   INFERDESK_WIDE_GEMM=<mask>: decode-batch GEMMs on the wide GEMMs (1 SwiGLU; 8 plain with K
  //     split over 2-block clusters; default 9; 0 none: cuBLASLt and silu_mul; try_wide),
  //     INFERDESK_WIDE_MIN_ROWS (fewest rows it serves); INFERDESK_FUSED_NORM=0: linear_add_rms_norm
  //     as two ops (below);
  //   INFERDESK_MOE_SCRATCH_MB, INFERDESK_STEP_TIMING=1 (below), INFERDESK_GEMM_LOG=1 (gemm.h).
  auto env_int = [](const char* name, int32_t& out) {
    if (const char* v = std::getenv(name); v && std::atoi(v) > 0) out = std::atoi(v);
  };
  env_int("INFERDESK_DECODE_WAVES", decode_waves_);
  env_int("INFERDESK_DECODE_MIN_KEYS", decode_min_keys_);
  env_int("INFERDESK_DECODE_HEADS_PER_BLOCK", decode_small_grid_heads_);
  env_int("INFERDESK_DECODE_MAX_HEADS", decode_max_heads_);
  if (const char* m = std::getenv("INFERDESK_DECODE_MMA"); m && *m == '0')
    decode_large_grid_load_ = DecodeLoad::Pipelined;
  if (const char* c = std::getenv("INFERDESK_SAMPLING_COPY_STREAM"); c && *c == '0')
    sampling_copy_stream_ = false;
  if (const char* m = std::getenv("INFERDESK_WIDE_GEMM"); m && *m) wide_mask_ = std::atoi(m);
  if (!hopper_kernels_available()) wide_mask_ = 0;
  fused_norm_ = options_.fused_norm;
  if (const char* f = std::getenv("INFERDESK_FUSED_NORM"); f && *f == '0') fused_norm_ = false;
  if ((wide_mask_ & 8) != 0 && fused_norm_)
    norm_ss_ = static_cast<float*>(device_alloc(size_t{static_cast<size_t>(sm_count_)} * kWideNormRows * sizeof(float),
                                                "norm partial sums"));
  else
    fused_norm_ = false;
  env_int("INFERDESK_WIDE_MIN_ROWS", wide_min_rows_);
  if (options_.moe_scratch_bytes <= 0) {
    size_t free_b = 0, total_b = 0;
    check_cuda(cudaMemGetInfo(&free_b, &total_b), "querying GPU memory");
    options_.moe_scratch_bytes =
        std::clamp<int64_t>(static_cast<int64_t>(total_b / 64), 256LL << 20, 2LL << 30);
  }
  if (const char* m = std::getenv("INFERDESK_MOE_SCRATCH_MB"); m && std::atoi(m) > 0)
    options_.moe_scratch_bytes = int64_t{std::atoi(m)} << 20;  // tuning experiments
  if (const char* t = std::getenv("INFERDESK_STEP_TIMING"); t && *t == '1') {
    step_timing_ = true;
    for (StepEvents& e : timing_)
      for (cudaEvent_t* ev : {&e.start, &e.forward, &e.end}) check_cuda(cudaEventCreate(ev), "event");
  }
}

CudaBackend::~CudaBackend() {
  if (stream_) cudaStreamSynchronize(stream_);
  if (copy_stream_) cudaStreamSynchronize(copy_stream_);
  if (upload_stream_) cudaStreamSynchronize(upload_stream_);
  if (step_timing_) {
    account_steps(timing_step_);
    if (timed_steps_ > 0)
      std::fprintf(stderr,
                   "cuda step timing: %lld steps; per step: forward %.4f ms, sampling %.4f ms, idle "
                   "before the step %.4f ms (%lld gaps), wall %.4f ms\n",
                   static_cast<long long>(timed_steps_), forward_ms_ / timed_steps_, sampling_ms_ / timed_steps_,
                   timed_gaps_ > 0 ? gap_ms_ / timed_gaps_ : 0.0, static_cast<long long>(timed_gaps_),
                   wall_ms_ / timed_steps_);
    for (StepEvents& e : timing_)
      for (cudaEvent_t ev : {e.start, e.forward, e.end}) cudaEventDestroy(ev);
  }
  invalidate_graphs();
  for (auto& [k, p] : inv_freq_) cudaFree(p);
  for (void* p : {static_cast<void*>(kv_), static_cast<void*>(sb_.base), attn_workspace_, split_counters_,
                  static_cast<void*>(norm_ss_),
                  sample_workspace_, sample_io_, convert_scratch_, static_cast<void*>(expert_counters_),
                  moe_small_scratch_, moe_large_scratch_, moe_grouped_scratch_})
    if (p) cudaFree(p);
  for (auto& [layer, t] : moe_tables_)
    if (t.dev) cudaFree(t.dev);
  gemm_.reset();
  for (auto& e : staging_done_)
    if (e) cudaEventDestroy(e);
  if (step_uploaded_) cudaEventDestroy(step_uploaded_);
  if (forward_done_) cudaEventDestroy(forward_done_);
  if (upload_stream_) cudaStreamDestroy(upload_stream_);
  for (cudaEvent_t* group : {sample_done_, sample_params_up_, sample_computed_})
    for (int i = 0; i < 2; ++i)
      if (group[i]) cudaEventDestroy(group[i]);
  if (copy_stream_) cudaStreamDestroy(copy_stream_);
  if (stream_) cudaStreamDestroy(stream_);
}

void* CudaBackend::device_alloc(size_t bytes, const char* what) {
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, std::max<size_t>(bytes, 16));
  if (e != cudaSuccess) {
    cudaGetLastError();
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    throw Error(ErrorCode::OutOfMemory,
                std::string("out of GPU memory allocating ") + std::to_string(bytes >> 20) +
                    " MiB for " + what + " (" + std::to_string(free_b >> 20) + " MiB free of " +
                    std::to_string(total_b >> 20) +
                    " MiB): use a smaller model, a shorter context or a lower memory fraction");
  }
  return p;
}

bool CudaBackend::grow_device(void*& p, size_t& capacity, size_t need, size_t alloc_bytes,
                              const char* what) {
  if (need <= capacity) return false;
  if (p) {
    synchronize();
    cudaFree(p);
    p = nullptr;
    capacity = 0;
  }
  p = device_alloc(alloc_bytes, what);
  capacity = alloc_bytes;
  return true;
}

void CudaBackend::ensure_attention_workspace(int32_t num_seqs, int32_t num_heads, int32_t head_dim,
                                             int32_t splits) {
  const size_t need = decode_workspace_bytes(num_seqs, num_heads, head_dim, splits);
  const size_t counters = need > 0 ? static_cast<size_t>(int64_t{num_seqs} * num_heads) * 4 : 0;
  if (need <= attn_workspace_bytes_ && counters <= split_counters_bytes_) return;
  if (capturing_) throw Error(ErrorCode::Internal, "attention workspace too small inside a capture");
  grow_device(attn_workspace_, attn_workspace_bytes_, need, need, "attention workspace");
  if (grow_device(split_counters_, split_counters_bytes_, counters, counters, "attention counters"))
    check_cuda(cudaMemsetAsync(split_counters_, 0, split_counters_bytes_, stream_),
               "clearing the attention counters");  // the kernels leave them zero
  invalidate_graphs();
}

Buffer CudaBackend::alloc(DType dtype, int64_t rows, int64_t cols) {
  const size_t bytes = static_cast<size_t>(rows * cols) * dtype_size(dtype);
  void* p = device_alloc(bytes, "activations");
  activation_bytes_ += static_cast<int64_t>(bytes);
  int64_t* counter = &activation_bytes_;
  auto owner = std::shared_ptr<void>(p, [counter, bytes](void* q) {
    cudaFree(q);
    *counter -= static_cast<int64_t>(bytes);
  });
  return Buffer(Tensor{p, dtype, rows, cols, cols}, owner);
}

// Host (mmapped) → pinned staging (double-buffered) → device, converting F16/F32 to BF16 on the
// GPU. Copies of one chunk overlap the host copy of the next.
void CudaBackend::upload(const HostTensor& host, bf16* dst) {
  const size_t esize = dtype_size(host.dtype);
  const int kind = host.dtype == DType::F32 ? 0 : host.dtype == DType::BF16 ? 1 : 2;
  if (host.dtype != DType::F32 && host.dtype != DType::BF16 && host.dtype != DType::F16)
    throw Error(ErrorCode::Unsupported, "tensor '" + host.name + "' has dtype " +
                                            dtype_name(host.dtype) + "; F32, F16 or BF16 expected");
  if (kind != 1 && convert_scratch_ == nullptr) {
    convert_scratch_bytes_ = 2 * kStagingChunk;
    convert_scratch_ = device_alloc(convert_scratch_bytes_, "weight conversion");
  }
  const size_t total = host.nbytes;
  int slot = 0;
  for (size_t off = 0; off < total; off += kStagingChunk, slot ^= 1) {
    const size_t len = std::min(kStagingChunk, total - off);
    check_cuda(cudaEventSynchronize(staging_done_[slot]), "weight upload");
    void* pinned = staging_[slot].get(kStagingChunk);
    std::memcpy(pinned, host.data + off, len);
    if (kind == 1) {
      check_cuda(cudaMemcpyAsync(reinterpret_cast<char*>(dst) + off, pinned, len,
                                 cudaMemcpyHostToDevice, stream_),
                 "weight upload");
    } else {
      void* raw = static_cast<char*>(convert_scratch_) + slot * kStagingChunk;
      check_cuda(cudaMemcpyAsync(raw, pinned, len, cudaMemcpyHostToDevice, stream_), "weight upload");
      convert_to_bf16(raw, kind, dst + off / esize, static_cast<int64_t>(len / esize), launch_);
    }
    check_cuda(cudaEventRecord(staging_done_[slot], stream_), "weight upload");
  }
}

Buffer CudaBackend::load_weight(const HostTensor& host, int64_t rows, int64_t cols) {
  return load_weight_rows({host}, cols);
}

Buffer CudaBackend::load_weight_rows(const std::vector<HostTensor>& parts, int64_t cols) {
  int64_t elems = 0;
  for (const HostTensor& p : parts) elems += p.numel();
  if (cols <= 0 || elems % cols != 0)
    throw Error(ErrorCode::Internal, "stacked weight parts do not form whole rows");
  const size_t bytes = static_cast<size_t>(elems) * 2;
  auto* dst = static_cast<bf16*>(device_alloc(bytes, "weights"));
  weight_bytes_ += static_cast<int64_t>(bytes);
  int64_t* counter = &weight_bytes_;
  auto owner = std::shared_ptr<void>(dst, [counter, bytes](void* q) {
    cudaFree(q);
    *counter -= static_cast<int64_t>(bytes);
  });
  int64_t at = 0;
  for (const HostTensor& p : parts) {
    upload(p, dst + at);
    at += p.numel();
  }
  return Buffer(Tensor{dst, DType::BF16, elems / cols, cols, cols}, owner);
}

void CudaBackend::fill_random(Tensor t, uint64_t seed, float scale) {
  cuda::fill_random(as_mat(t), seed, scale, launch_);
  // Random fills are how dummy weights are made: count them as weights.
  const int64_t bytes = t.rows * t.cols * static_cast<int64_t>(t.element_size());
  weight_bytes_ += bytes;
  activation_bytes_ -= bytes;
}

int64_t CudaBackend::kv_block_bytes(const KvCacheShape& s) const {
  return int64_t{s.num_layers} * 2 * s.num_kv_heads * s.block_size * s.head_dim * 2;
}

void CudaBackend::init_kv_cache(const KvCacheShape& shape) {
  check_cuda(cudaStreamSynchronize(stream_), "finishing the weight upload");
  if (kv_) cudaFree(kv_);
  kv_ = nullptr;
  kv_shape_ = shape;
  kv_layer_elems_ = int64_t{shape.num_blocks} * shape.num_kv_heads * shape.block_size * shape.head_dim;
  kv_bytes_ = kv_block_bytes(shape) * shape.num_blocks;
  kv_ = static_cast<bf16*>(device_alloc(static_cast<size_t>(kv_bytes_), "the KV cache"));
  invalidate_graphs();
}

int64_t CudaBackend::kv_cache_budget(double utilization) const {
  size_t free_b = 0, total_b = 0;
  check_cuda(cudaMemGetInfo(&free_b, &total_b), "querying GPU memory");
  // Headroom for what is allocated after the cache: sampling buffers, graphs, cuBLASLt; and the
  // MoE scratch the grouped and large-batch expert paths may still allocate (together bounded by
  // options_.moe_scratch_bytes, cuda_moe.cpp).
  constexpr int64_t kHeadroom = 768LL << 20;
  const int64_t used = static_cast<int64_t>(total_b - free_b);
  const int64_t allowed = static_cast<int64_t>(utilization * static_cast<double>(total_b));
  return std::max<int64_t>(-1, std::min<int64_t>(allowed - used, static_cast<int64_t>(free_b)) -
                                   kHeadroom - moe_reserved_bytes());
}

MemoryInfo CudaBackend::memory_info() const {
  MemoryInfo m;
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
    m.device_total = static_cast<int64_t>(total_b);
    m.device_used = static_cast<int64_t>(total_b - free_b);
  }
  m.weights = weight_bytes_;
  m.kv_cache = kv_bytes_;
  m.activations = activation_bytes_;
  return m;
}

void CudaBackend::synchronize() { check_cuda(cudaStreamSynchronize(stream_), "GPU step"); }

// ---------------------------------------------------------------------------------- steps

int CudaBackend::graph_bucket(int32_t n) const {
  if (!options_.cuda_graphs) return 0;
  for (int b : options_.graph_batch_sizes) {
    if (b < n) continue;
    // A MoE model's step is captured only when the small-batch or the grouped expert path serves
    // all its (padded) rows in every MoE layer: the large-batch path synchronises with the host.
    if (moe_model_ && b > std::max(moe_small_max_rows(), moe_grouped_max_rows())) return 0;
    return b;
  }
  return 0;
}

void CudaBackend::ensure_step_capacity(int32_t tokens, int32_t seqs, int32_t blocks) {
  if (tokens <= sb_.max_tokens && seqs <= sb_.max_seqs && blocks <= sb_.max_blocks) return;
  StepBuffers n;
  n.max_tokens = std::max({tokens, sb_.max_tokens, 256});
  n.max_seqs = std::max({seqs, sb_.max_seqs, 256});
  n.max_blocks = std::max({blocks * 2, sb_.max_blocks, 4096});
  n.base = static_cast<int32_t*>(device_alloc(n.total_ints() * 4, "step metadata"));
  int32_t* p = n.base;
  for (int32_t** a : {&n.token_ids, &n.positions, &n.slots, &n.logit_rows}) {
    *a = p;
    p += n.max_tokens;
  }
  for (int32_t** a : {&n.query_start, &n.query_len, &n.context_len, &n.block_table_start}) {
    *a = p;
    p += n.max_seqs;
  }
  n.block_tables = p;
  if (sb_.base) {
    cudaStreamSynchronize(stream_);
    cudaFree(sb_.base);
  }
  sb_ = n;
  invalidate_graphs();
}

int32_t CudaBackend::decode_splits(int32_t num_seqs, int32_t num_kv_heads) const {
  // Split only when the (sequence, kv head) blocks do not fill the SMs once: then enough splits for
  // about decode_waves_ waves, and the kernel uses fewer for a short context (at least
  // min_keys_per_split keys each, decided on the device). H200, 2026-11-30: 64 sequences x 8 kv
  // heads ran faster unsplit (10,109 against 9,635 tok/s with 2 splits), as did the offline mix.
  const int64_t work = int64_t{num_seqs} * std::max(num_kv_heads, 1);
  if (work >= sm_count_) return 1;
  return static_cast<int32_t>(
      std::clamp<int64_t>((int64_t{decode_waves_} * sm_count_ + work - 1) / work, 1, 32));
}

StepPlan CudaBackend::begin_step(const StepInput& step) {
  if (capturing_) {  // a previous step failed mid-capture: drop it
    cudaGraph_t g = nullptr;
    cudaStreamEndCapture(stream_, &g);
    if (g) cudaGraphDestroy(g);
    cudaGetLastError();
    capturing_ = 0;
  }
  replaying_ = 0;
  deferred_ = {};
  if (step_timing_) {
    const auto now = std::chrono::steady_clock::now();
    if (timing_step_ > 0) wall_ms_ += std::chrono::duration<double, std::milli>(now - last_step_wall_).count();
    last_step_wall_ = now;
    // Steps up to kTimingRing - 1 back (long done) are added before this step's slot, which held
    // the step kTimingRing back (the previous one of the oldest added), is recorded again.
    account_steps(timing_step_ - kTimingRing + 2);
    StepEvents& e = timing_[timing_step_ % kTimingRing];
    cudaEventRecord(e.start, stream_);
    e.forward_set = e.end_set = false;
    ++timing_step_;
  }
  const int32_t n = step.num_tokens();
  const auto S = static_cast<int32_t>(step.seqs.size());
  bool decode = S == n && static_cast<int32_t>(step.logit_rows.size()) == n;
  max_query_len_ = 0;
  for (int32_t i = 0; i < S; ++i) {
    const StepSeq& s = step.seqs[i];
    max_query_len_ = std::max(max_query_len_, s.query_len);
    // (logit_rows has one entry per sequence only while `decode` still holds.)
    if (s.query_len != 1 || s.query_start != i || (decode && step.logit_rows[i] != i)) decode = false;
  }
  decode_only_ = decode;
  const int bucket = decode && num_heads_seen_ > 0 ? graph_bucket(n) : 0;
  rows_ = bucket ? bucket : n;
  num_seqs_ = bucket ? bucket : S;
  const auto nblocks = static_cast<int32_t>(step.block_tables.size());
  ensure_step_capacity(rows_, num_seqs_, nblocks);

  // The previous step's upload may still be reading step_host_ (a step that sampled nothing did
  // not synchronise): wait for it before packing this one into the same pinned buffer.
  if (step_upload_pending_) {
    check_cuda(cudaEventSynchronize(step_uploaded_), "waiting for the previous step upload");
    step_upload_pending_ = false;
  }
  // Pack the host copy in the device layout: per-token arrays, per-sequence arrays, tables.
  const size_t head_ints = static_cast<size_t>(sb_.max_tokens) * 4 + static_cast<size_t>(sb_.max_seqs) * 4;
  auto* h = static_cast<int32_t*>(step_host_.get((head_ints + sb_.max_blocks) * 4));
  int32_t* tok = h;
  int32_t* pos = tok + sb_.max_tokens;
  int32_t* slot = pos + sb_.max_tokens;
  int32_t* lrow = slot + sb_.max_tokens;
  int32_t* qs = lrow + sb_.max_tokens;
  int32_t* ql = qs + sb_.max_seqs;
  int32_t* cl = ql + sb_.max_seqs;
  int32_t* bts = cl + sb_.max_seqs;
  int32_t* bt = bts + sb_.max_seqs;
  std::copy(step.token_ids.begin(), step.token_ids.end(), tok);
  std::copy(step.positions.begin(), step.positions.end(), pos);
  std::copy(step.slot_mapping.begin(), step.slot_mapping.end(), slot);
  std::copy(step.logit_rows.begin(), step.logit_rows.end(), lrow);
  for (int32_t i = 0; i < S; ++i) {
    qs[i] = step.seqs[i].query_start;
    ql[i] = step.seqs[i].query_len;
    cl[i] = step.seqs[i].context_len;
    bts[i] = step.seqs[i].block_table_start;
  }
  for (int32_t i = n; i < rows_; ++i) {  // padding rows: token 0, no KV write, empty sequence
    tok[i] = 0;
    pos[i] = 0;
    slot[i] = -1;
    lrow[i] = i;
  }
  for (int32_t i = S; i < num_seqs_; ++i) {
    qs[i] = i;
    ql[i] = 1;
    cl[i] = 0;
    bts[i] = 0;
  }
  std::copy(step.block_tables.begin(), step.block_tables.end(), bt);
  // One copy: the host buffer mirrors the device layout, block tables right after the
  // per-sequence arrays (StepBuffers).
  static_assert(sizeof(int32_t) == 4);
  if (sb_.block_tables != sb_.base + head_ints || bt != h + head_ints)
    throw Error(ErrorCode::Internal, "step metadata layout: block tables must follow the head");
  // On the upload stream after the previous forward (forward_done_), unless the previous step never
  // reached end_step (it failed): its kernels may still read the buffers, so stream order instead.
  const cudaStream_t us = upload_stream_ && !step_open_ ? upload_stream_ : stream_;
  if (us != stream_ && forward_recorded_)  // the previous forward is done with the buffers
    check_cuda(cudaStreamWaitEvent(us, forward_done_, 0), "ordering the step upload");
  check_cuda(cudaMemcpyAsync(sb_.base, h, (head_ints + static_cast<size_t>(nblocks)) * 4,
                             cudaMemcpyHostToDevice, us),
             "uploading the step");
  check_cuda(cudaEventRecord(step_uploaded_, us), "recording the step upload");
  if (us != stream_) check_cuda(cudaStreamWaitEvent(stream_, step_uploaded_, 0), "waiting for the step upload");
  step_upload_pending_ = true;
  step_open_ = true;
  if (step.tokens_from_last_sample) {
    // Overlapped decode: this step's tokens are the last sampling's, still on the device (it ran
    // earlier in the stream); the host wrote -1 there.
    if (last_sample_tokens_ == nullptr || last_sample_rows_ != n || !decode_only_)
      throw Error(ErrorCode::Internal, "a chained step must be a decode step over the rows of the "
                                       "last sampling (" + std::to_string(last_sample_rows_) +
                                       " rows, this step " + std::to_string(n) + ")");
    check_cuda(cudaMemcpyAsync(sb_.token_ids, last_sample_tokens_, static_cast<size_t>(n) * 4,
                               cudaMemcpyDeviceToDevice, stream_),
               "chaining the sampled tokens");
    ++chained_steps_;
  }

  if (decode_only_) splits_ = decode_splits(num_seqs_, kv_shape_.num_kv_heads);
  const int32_t logit_rows = decode_only_ ? rows_ : static_cast<int32_t>(step.logit_rows.size());
  if (bucket) {
    // The attention workspace must exist before a capture (no allocation inside one).
    ensure_attention_workspace(num_seqs_, num_heads_seen_, kv_shape_.head_dim, splits_);
    auto it = graphs_.find(bucket);
    if (it != graphs_.end()) {
      replaying_ = bucket;
      return StepPlan{rows_, logit_rows, true};
    }
    // The first step of a bucket runs eagerly: GEMM autotuning and one-time uploads happen
    // outside any capture. The next one is captured.
    if (eager_runs_[bucket]++ == 0) return StepPlan{rows_, logit_rows, false};
    check_cuda(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "graph capture");
    capturing_ = bucket;
  }
  return StepPlan{rows_, logit_rows, false};
}

void CudaBackend::end_step() {
  if (capturing_) {
    cudaGraph_t g = nullptr;
    const int bucket = capturing_;
    capturing_ = 0;
    check_cuda(cudaStreamEndCapture(stream_, &g), "ending graph capture");
    cudaGraphExec_t exec = nullptr;
    const cudaError_t e = cudaGraphInstantiate(&exec, g, 0);
    cudaGraphDestroy(g);
    check_cuda(e, "instantiating a CUDA graph");
    graphs_[bucket] = exec;
    replaying_ = bucket;
  }
  if (replaying_) {
    check_cuda(cudaGraphLaunch(graphs_.at(replaying_), stream_), "launching a CUDA graph");
    replaying_ = 0;
  }
  if (upload_stream_) {  // the next step's upload may overwrite the step buffers after this
    check_cuda(cudaEventRecord(forward_done_, stream_), "recording the forward");
    forward_recorded_ = true;
  }
  step_open_ = false;
  if (step_timing_ && timing_step_ > 0) {
    StepEvents& e = current_step_events();
    cudaEventRecord(e.forward, stream_);
    e.forward_set = true;
  }
}

void CudaBackend::account_steps(int64_t until) {
  for (; timing_accounted_ < until; ++timing_accounted_) {
    const int64_t i = timing_accounted_;
    StepEvents& e = timing_[i % kTimingRing];
    if (!e.forward_set || !e.end_set) continue;  // a step without sampling (or a failed one)
    float f = 0, sm = 0, g = 0;
    cudaEventSynchronize(e.end);
    cudaEventElapsedTime(&f, e.start, e.forward);
    cudaEventElapsedTime(&sm, e.forward, e.end);
    forward_ms_ += f;
    sampling_ms_ += sm;
    ++timed_steps_;
    const StepEvents& prev = timing_[(i + kTimingRing - 1) % kTimingRing];
    if (i > 0 && prev.end_set && cudaEventElapsedTime(&g, prev.end, e.start) == cudaSuccess) {
      gap_ms_ += std::max(0.0f, g);  // negative: this step's start was recorded before the
      ++timed_gaps_;                 // previous sampling ended (queued ahead): no idle time
    }
  }
}

void CudaBackend::invalidate_graphs() {
  for (auto& [b, exec] : graphs_) cudaGraphExecDestroy(exec);
  graphs_.clear();
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

}  // namespace inferdesk
