// Helpers of the kernel op tests: strided device matrices of F32 or BF16 whose padding stays
// poisoned, and a CPU-backend harness (the reference) fed with the same values.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/layers/rope.h"
#include "core/model/config.h"
#include "cuda/kernels/common.h"
#include "cuda/kernels/rope_kv.h"
#include "tests/gpu/gpu_test.h"

namespace inferdesk::gputest {

using cuda::Dt;
using cuda::Mat;
using bf16 = __nv_bfloat16;

// Tolerances (normalised error, see gpu_test.h):
// - BF16 outputs: round-to-nearest-even to 8 mantissa bits has a relative error of at most 2^-9
//   per element and an RMS of about 2^-8 / sqrt(12) ~ 1.1e-3, so 5e-3 leaves a 4x margin while a
//   wrong element (a swapped pair, a missing scale) moves the error far above it.
constexpr double kTolBf16 = 5e-3;
// - F32 outputs from identical inputs: only the order of F32 additions differs (relative errors of
//   a few 1e-7 for these sizes); 1e-5 still leaves a wide margin.
constexpr double kTolF32 = 1e-5;

inline const char* dt_name(Dt dt) { return dt == Dt::F32 ? "F32" : "BF16"; }

// rows x cols of F32 or BF16 with row stride `stride` (>= cols) at `offset` elements into its own
// allocation. Elements outside the matrix (row padding, the offset) hold the poison bit pattern
// (all ones) and must still hold it after a kernel ran.
class DevMatrix {
 public:
  DevMatrix(Dt dt, int64_t rows, int64_t cols, int64_t stride = -1, int64_t offset = 0)
      : dt_(dt),
        rows_(rows),
        cols_(cols),
        stride_(stride < 0 ? cols : stride),
        offset_(offset),
        bytes_((offset + rows * stride_) * elem()) {
    if (bytes_ > 0) {
      if (cudaMalloc(&base_, static_cast<size_t>(bytes_)) != cudaSuccess) throw std::bad_alloc();
      cudaMemset(base_, 0xFF, static_cast<size_t>(bytes_));
    }
  }
  ~DevMatrix() {
    if (base_) cudaFree(base_);
  }
  DevMatrix(const DevMatrix&) = delete;
  DevMatrix& operator=(const DevMatrix&) = delete;

  Dt dt() const { return dt_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t stride() const { return stride_; }
  void* data() const { return static_cast<char*>(base_) + offset_ * elem(); }
  Mat mat() const { return Mat{data(), dt_, rows_, cols_, stride_}; }
  // Columns [c0, c0 + n) as a Mat (same stride).
  Mat cols_mat(int64_t c0, int64_t n) const {
    return Mat{static_cast<char*>(data()) + c0 * elem(), dt_, rows_, n, stride_};
  }

  // Uploads dense rows*cols values (rounded to bf16 for a BF16 matrix); padding stays poisoned.
  void upload(const std::vector<float>& dense) {
    std::vector<uint8_t> raw = raw_download();
    for (int64_t r = 0; r < rows_; ++r)
      for (int64_t c = 0; c < cols_; ++c) put(raw, r, c, dense[static_cast<size_t>(r * cols_ + c)]);
    if (cudaMemcpy(base_, raw.data(), raw.size(), cudaMemcpyHostToDevice) != cudaSuccess)
      throw std::runtime_error("DevMatrix upload failed");
  }
  // Dense rows*cols values as floats.
  std::vector<float> download() const {
    const std::vector<uint8_t> raw = raw_download();
    std::vector<float> out(static_cast<size_t>(rows_ * cols_));
    for (int64_t r = 0; r < rows_; ++r)
      for (int64_t c = 0; c < cols_; ++c) out[static_cast<size_t>(r * cols_ + c)] = get(raw, r, c);
    return out;
  }
  // Number of bytes outside the matrix that no longer hold the poison pattern.
  int64_t damaged_padding() const {
    const std::vector<uint8_t> raw = raw_download();
    std::vector<bool> inside(raw.size(), false);
    for (int64_t r = 0; r < rows_; ++r) {
      const int64_t b = (offset_ + r * stride_) * elem();
      std::fill(inside.begin() + b, inside.begin() + b + cols_ * elem(), true);
    }
    int64_t n = 0;
    for (size_t i = 0; i < raw.size(); ++i) n += !inside[i] && raw[i] != 0xFF;
    return n;
  }
  std::vector<uint8_t> raw_download() const {
    std::vector<uint8_t> raw(static_cast<size_t>(bytes_));
    if (bytes_ && cudaMemcpy(raw.data(), base_, raw.size(), cudaMemcpyDeviceToHost) != cudaSuccess)
      throw std::runtime_error("DevMatrix download failed");
    return raw;
  }

 private:
  int64_t elem() const { return dt_ == Dt::F32 ? 4 : 2; }
  size_t at(int64_t r, int64_t c) const { return static_cast<size_t>((offset_ + r * stride_ + c) * elem()); }
  void put(std::vector<uint8_t>& raw, int64_t r, int64_t c, float v) const {
    if (dt_ == Dt::F32) {
      std::memcpy(raw.data() + at(r, c), &v, 4);
    } else {
      const bf16 h = float_to_bf16(v);
      std::memcpy(raw.data() + at(r, c), &h, 2);
    }
  }
  float get(const std::vector<uint8_t>& raw, int64_t r, int64_t c) const {
    if (dt_ == Dt::F32) {
      float v;
      std::memcpy(&v, raw.data() + at(r, c), 4);
      return v;
    }
    bf16 h;
    std::memcpy(&h, raw.data() + at(r, c), 2);
    return bf16_to_float(h);
  }

  Dt dt_;
  int64_t rows_, cols_, stride_, offset_, bytes_;
  void* base_ = nullptr;
};

// The CPU backend with the tensors of one comparison (kept alive here).
class CpuRef {
 public:
  CpuRef() : b_(make_cpu_backend(0)) {}
  Backend& operator*() { return *b_; }
  Backend* operator->() { return b_.get(); }

  // An F32 activation tensor holding `v` (rows*cols).
  Tensor tensor(int64_t rows, int64_t cols, const std::vector<float>& v) {
    bufs_.push_back(b_->alloc(DType::F32, rows, cols));
    Tensor t = bufs_.back().tensor();
    std::memcpy(t.data, v.data(), static_cast<size_t>(rows * cols) * 4);
    return t;
  }
  Tensor zeros(int64_t rows, int64_t cols) {
    return tensor(rows, cols, std::vector<float>(static_cast<size_t>(rows * cols), 0.0f));
  }
  // A BF16 weight (read in place by the CPU backend) holding `v` rounded to bf16.
  Tensor bf16_weight(int64_t rows, int64_t cols, const std::vector<float>& v) {
    auto bits = std::make_shared<std::vector<uint16_t>>(v.size());
    for (size_t i = 0; i < v.size(); ++i) bits->at(i) = f32_to_bf16(v[i]);
    HostTensor h;
    h.name = "test_weight";
    h.dtype = DType::BF16;
    h.shape = {rows, cols};
    h.data = reinterpret_cast<const std::byte*>(bits->data());
    h.nbytes = bits->size() * 2;
    host_.push_back(bits);
    bufs_.push_back(b_->load_weight(h, rows, cols));
    return bufs_.back().tensor();
  }
  std::vector<float> host(const Tensor& t) {
    std::vector<float> v(static_cast<size_t>(t.rows * t.cols));
    b_->to_host(t, v.data());
    return v;
  }

 private:
  std::unique_ptr<Backend> b_;
  std::vector<Buffer> bufs_;
  std::vector<std::shared_ptr<std::vector<uint16_t>>> host_;
};

// Random values in [lo, hi) rounded to bf16 (so both sides see exactly the same inputs).
inline std::vector<float> random_bf16(size_t n, uint64_t seed, float lo = -1.f, float hi = 1.f) {
  return round_bf16(random_vector(n, seed, lo, hi));
}

inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) != std::isnan(b[i])) return INFINITY;
    m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  }
  return m;
}

// Llama-3.1 frequencies (theta 500000, llama3 scaling factor 8) over rotary_dim dims.
inline RopeConfig llama3_rope(int32_t rotary_dim, float attention_scaling) {
  ModelConfig c;
  c.head_dim = rotary_dim;
  c.rope_theta = 500000.0;
  c.rope_scaling.type = "llama3";
  c.rope_scaling.factor = 8.0;
  c.rope_scaling.low_freq_factor = 1.0;
  c.rope_scaling.high_freq_factor = 4.0;
  c.rope_scaling.original_max_position_embeddings = 8192;
  RopeConfig r = make_rope_config(c);
  r.attention_scaling = attention_scaling;
  return r;
}

// RopeKvArgs for q, k and v as consecutive column blocks of one fused [T, stride] qkv tensor,
// rotating all head_dim dims, with the given step metadata and cache (either may be null).
struct RopeStep {
  const float* inv_freq = nullptr;
  const int32_t* positions = nullptr;
  const int32_t* slots = nullptr;
  bf16* k_cache = nullptr;
  bf16* v_cache = nullptr;
  int32_t block_size = 16;
};
inline cuda::RopeKvArgs fused_rope_args(bf16* qkv, int64_t stride, int32_t tokens, int32_t q_heads, int32_t kv_heads,
                                        int32_t head_dim, const RopeStep& st) {
  cuda::RopeKvArgs a;
  a.q = qkv;
  a.k = qkv + int64_t{q_heads} * head_dim;
  a.v = a.k + int64_t{kv_heads} * head_dim;
  a.q_stride = a.k_stride = a.v_stride = stride;
  a.rotary_dim = head_dim;
  a.num_tokens = tokens;
  a.num_q_heads = q_heads;
  a.num_kv_heads = kv_heads;
  a.head_dim = head_dim;
  a.inv_freq = st.inv_freq;
  a.positions = st.positions;
  a.slot_mapping = st.slots;
  a.k_cache = st.k_cache;
  a.v_cache = st.v_cache;
  a.block_size = st.block_size;
  return a;
}

// A non-blocking CUDA stream for the length of a scope.
class Stream {
 public:
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream() {
    if (cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking) != cudaSuccess) throw std::runtime_error("stream");
  }
  ~Stream() { cudaStreamDestroy(s_); }
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

// The launches `enqueue(s)` makes, captured into a CUDA graph in global mode (where an allocation
// or a synchronisation inside would break the capture) and instantiated.
class CapturedGraph {
 public:
  template <class F>
  CapturedGraph(cudaStream_t s, F&& enqueue) {
    ok(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "begin capture");
    enqueue(s);
    ok(cudaStreamEndCapture(s, &graph_), "end capture");
    ok(cudaGraphInstantiate(&exec_, graph_, 0), "instantiate");
  }
  ~CapturedGraph() {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
  }
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;

  void launch(cudaStream_t s) const { ok(cudaGraphLaunch(exec_, s), "graph launch"); }
  // Edges that let the downstream kernel start before the upstream one completed (what a launch
  // with programmatic stream serialization becomes when captured).
  size_t programmatic_edges() const {
    size_t n = 0;
    ok(cudaGraphGetEdges(graph_, nullptr, nullptr, nullptr, &n), "count edges");
    std::vector<cudaGraphNode_t> from(n), to(n);
    std::vector<cudaGraphEdgeData> data(n);
    ok(cudaGraphGetEdges(graph_, from.data(), to.data(), data.data(), &n), "get edges");
    size_t programmatic = 0;
    for (size_t i = 0; i < n; ++i)
      programmatic += data[i].type == cudaGraphDependencyTypeProgrammatic ||
                      data[i].from_port != cudaGraphKernelNodePortDefault;
    return programmatic;
  }

 private:
  static void ok(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
  }
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

// A [rows, cols] BF16 weight uploaded `offset` elements into its own allocation.
struct DevWeight {
  DeviceBuffer<bf16> buf;
  int64_t offset;
  DevWeight(const std::vector<float>& v, int64_t offset) : buf(v.size() + offset), offset(offset) {
    std::vector<bf16> h = to_bf16(v);
    if (cudaMemcpy(buf.get() + offset, h.data(), h.size() * 2, cudaMemcpyHostToDevice) != cudaSuccess)
      throw std::runtime_error("upload failed");
  }
  const bf16* get() const { return buf.get() + offset; }
};

// y[M, rows_out] of the CPU reference for x [M, K] and W [rows_w, K] (+ bias).
inline std::vector<float> cpu_linear(CpuRef& cpu, const std::vector<float>& x, int M, int64_t K,
                                     const std::vector<float>& w, int64_t rows_w, const std::vector<float>* bias) {
  const Tensor out = cpu.zeros(M, rows_w);
  Tensor b;
  if (bias) b = cpu.bf16_weight(1, rows_w, *bias);
  cpu->linear(cpu.tensor(M, K, x), cpu.bf16_weight(rows_w, K, w), bias ? &b : nullptr, out);
  return cpu.host(out);
}

inline void sync_ok() {
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) throw std::runtime_error(std::string("kernel failed: ") + cudaGetErrorString(e));
}

}  // namespace inferdesk::gputest
