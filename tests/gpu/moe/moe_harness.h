// Shared by the MoE op tests: the CPU backend (the reference) and a CUDA backend side by side,
// tensors holding the same values on both (BF16-rounded where the GPU tensor is BF16, so both see
// exactly the same inputs), GPU outputs inside poisoned allocations (0xFF bytes: NaN for F32 and
// BF16, -1 for I32) whose padding must stay poisoned, and expert weights loaded the way the
// decoder loads them (gate and up stacked in one weight, or separate).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <ostream>
#include <random>
#include <stdexcept>
#include <vector>

#include "core/backend/backend.h"
#include "core/util/error.h"
#include "cuda/cuda_backend.h"
#include "tests/gpu/gpu_test.h"

namespace inferdesk::gputest {

// Normalised error bound of a BF16 MoE output against the F32 CPU reference. The GPU rounds the
// SwiGLU activations to BF16 (as the dense layers do; the CPU keeps them in F32: a relative error
// of at most 2^-9 per element, RMS ~1.1e-3 after the down projection) and the output to BF16 (RMS
// ~1.1e-3); the order of F32 additions differs (~1e-6). Together ~1.6e-3; 8e-3 leaves a 5x margin,
// while a wrong expert, slot, weight or token gives errors of order 0.3 and more.
constexpr double kTolMoe = 8e-3;

// A GPU tensor `view` inside its own allocation `whole` (extra rows below, extra columns right).
struct GpuMat {
  Tensor whole, view;
};

class MoePair {
 public:
  explicit MoePair(const CudaBackendOptions& o = {}) : cpu_(make_cpu_backend(0)), gpu_(make_cuda_backend(o)) {}
  Backend& cpu() { return *cpu_; }
  Backend& gpu() { return *gpu_; }

  Tensor cpu_f32(int64_t rows, int64_t cols, const std::vector<float>& v) {
    bufs_.push_back(cpu_->alloc(DType::F32, rows, cols));
    Tensor t = bufs_.back().tensor();
    std::memcpy(t.data, v.data(), static_cast<size_t>(rows * cols) * 4);
    return t;
  }
  Tensor cpu_i32(int64_t rows, int64_t cols, const std::vector<int32_t>& v) {
    bufs_.push_back(cpu_->alloc(DType::I32, rows, cols));
    Tensor t = bufs_.back().tensor();
    std::memcpy(t.data, v.data(), static_cast<size_t>(rows * cols) * 4);
    return t;
  }

  // rows x cols of `dt` in an allocation of (rows + extra_rows) x (cols + pad_cols), all poisoned,
  // then `v` (rows*cols values, dense; empty: left poisoned) written into the view.
  GpuMat gpu_mat(DType dt, int64_t rows, int64_t cols, const std::vector<float>& v = {}, int64_t pad_cols = 0,
                 int64_t extra_rows = 0) {
    bufs_.push_back(gpu_->alloc(dt, rows + extra_rows, cols + pad_cols));
    GpuMat m;
    m.whole = bufs_.back().tensor();
    m.view = m.whole.row_slice(0, rows).col_slice(0, cols);
    std::vector<uint8_t> raw(bytes(m.whole), 0xFF);
    const size_t es = dtype_size(dt);
    for (int64_t r = 0; r < rows && !v.empty(); ++r)
      for (int64_t c = 0; c < cols; ++c) {
        uint8_t* p = raw.data() + (r * m.whole.stride + c) * es;
        const float f = v[static_cast<size_t>(r * cols + c)];
        if (dt == DType::F32) {
          std::memcpy(p, &f, 4);
        } else if (dt == DType::BF16) {
          const uint16_t b = static_cast<__nv_bfloat16_raw>(float_to_bf16(f)).x;
          std::memcpy(p, &b, 2);
        } else if (dt == DType::I32) {
          const auto i = static_cast<int32_t>(f);
          std::memcpy(p, &i, 4);
        } else {
          throw std::runtime_error("gpu_mat: unsupported dtype");
        }
      }
    gpu_->synchronize();
    // (A pageable upload may return before its DMA lands; the backend's stream does not wait for
    // the legacy stream: let it finish.)
    if (cudaMemcpy(m.whole.data, raw.data(), raw.size(), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess)
      throw std::runtime_error("gpu_mat upload failed");
    return m;
  }

  // The values of a tensor on either backend as floats (to_host; synchronises).
  static std::vector<float> host(Backend& b, const Tensor& t) {
    std::vector<float> v(static_cast<size_t>(t.rows * t.cols));
    b.to_host(t, v.data());
    return v;
  }

  // Bytes of m.whole outside m.view that no longer hold the poison pattern.
  int64_t damaged(const GpuMat& m) {
    gpu_->synchronize();
    std::vector<uint8_t> raw(bytes(m.whole));
    if (cudaMemcpy(raw.data(), m.whole.data, raw.size(), cudaMemcpyDeviceToHost) != cudaSuccess)
      throw std::runtime_error("download failed");
    const size_t es = dtype_size(m.whole.dtype);
    int64_t n = 0;
    for (int64_t r = 0; r < m.whole.rows; ++r)
      for (int64_t c = 0; c < m.whole.cols; ++c) {
        if (r < m.view.rows && c < m.view.cols) continue;
        for (size_t b = 0; b < es; ++b) n += raw[(r * m.whole.stride + c) * es + b] != 0xFF;
      }
    return n;
  }

  // E experts of gate/up [I, H] and down [H, I] with BF16 values (uniform, scaled so activations
  // stay O(1)) on both backends. stacked: on the GPU each expert's gate and up are one weight (as
  // the decoder loads them for a backend that stacks weights), else separate weights.
  struct Experts {
    std::vector<ExpertWeights> cpu, gpu;
  };
  Experts experts(int E, int64_t H, int64_t I, uint64_t seed, bool stacked) {
    Experts out;
    const float sg = std::sqrt(3.0f / static_cast<float>(H)), sd = std::sqrt(3.0f / static_cast<float>(I));
    for (int e = 0; e < E; ++e) {
      const uint64_t s = seed * 1000 + static_cast<uint64_t>(e) * 3;
      const HostTensor g = host_bf16(I, H, random_vector(static_cast<size_t>(I * H), s, -sg, sg));
      const HostTensor u = host_bf16(I, H, random_vector(static_cast<size_t>(I * H), s + 1, -sg, sg));
      const HostTensor d = host_bf16(H, I, random_vector(static_cast<size_t>(H * I), s + 2, -sd, sd));
      ExpertWeights c;
      c.gate = keep(cpu_->load_weight(g, I, H));
      c.up = keep(cpu_->load_weight(u, I, H));
      c.down = keep(cpu_->load_weight(d, H, I));
      out.cpu.push_back(c);
      ExpertWeights w;
      if (stacked) {
        const Tensor gu = keep(gpu_->load_weight_rows({g, u}, H));
        w.gate = gu.row_slice(0, I);
        w.up = gu.row_slice(I, I);
      } else {
        w.gate = keep(gpu_->load_weight(g, I, H));
        w.up = keep(gpu_->load_weight(u, I, H));
      }
      w.down = keep(gpu_->load_weight(d, H, I));
      out.gpu.push_back(w);
    }
    gpu_->synchronize();
    return out;
  }

 private:
  static size_t bytes(const Tensor& t) { return static_cast<size_t>(t.rows * t.stride) * dtype_size(t.dtype); }
  Tensor keep(Buffer b) {
    bufs_.push_back(std::move(b));
    return bufs_.back().tensor();
  }
  // A BF16 host tensor of v (kept alive here: the CPU backend reads weights in place).
  HostTensor host_bf16(int64_t rows, int64_t cols, const std::vector<float>& v) {
    auto bits = std::make_shared<std::vector<uint16_t>>(v.size());
    for (size_t i = 0; i < v.size(); ++i) (*bits)[i] = f32_to_bf16(v[i]);
    host_.push_back(bits);
    HostTensor h;
    h.name = "moe_test_weight";
    h.dtype = DType::BF16;
    h.shape = {rows, cols};
    h.data = reinterpret_cast<const std::byte*>(bits->data());
    h.nbytes = bits->size() * 2;
    return h;
  }

  // Declared first: destroyed last (buffers' deleters reach into their backend).
  std::unique_ptr<Backend> cpu_, gpu_;
  std::vector<std::shared_ptr<std::vector<uint16_t>>> host_;
  std::vector<Buffer> bufs_;
};

// ------------------------------------------------------------ moe_experts cases (both backends)

enum class Route { Random, AllToSame, FewExperts };

struct ExpertCase {
  int T, E, k;
  int64_t H, I;
  bool stacked;
  Route route;
};

inline std::ostream& operator<<(std::ostream& os, const ExpertCase& c) {
  const char* r = c.route == Route::Random ? "random" : c.route == Route::AllToSame ? "all-to-same" : "few-experts";
  return os << "T " << c.T << " E " << c.E << " k " << c.k << " H " << c.H << " I " << c.I
            << (c.stacked ? " stacked" : " separate") << " route " << r;
}

// Distinct experts per token. AllToSame: every token picks experts 3, 0, 1, 2, 4, ... (so expert 3
// gets every token in slot 0). FewExperts: only experts {1, 3, E-1} and, for k > 3, the next ones
// after E-1 downwards (most experts get nothing).
inline std::vector<int32_t> make_ids(const ExpertCase& c, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<int32_t> ids;
  for (int t = 0; t < c.T; ++t) {
    std::vector<int32_t> pool;
    if (c.route == Route::Random) {
      for (int e = 0; e < c.E; ++e) pool.push_back(e);
      std::shuffle(pool.begin(), pool.end(), g);
    } else if (c.route == Route::AllToSame) {
      pool.push_back(3 % c.E);
      for (int e = 0; e < c.E; ++e)
        if (e != 3 % c.E) pool.push_back(e);
    } else {
      pool = {1, 3, c.E - 1};
      for (int e = c.E - 2; static_cast<int>(pool.size()) < c.k; --e)
        if (e != 1 && e != 3) pool.push_back(e);
      std::shuffle(pool.begin(), pool.end(), g);
    }
    for (int j = 0; j < c.k; ++j) ids.push_back(pool[static_cast<size_t>(j)]);
  }
  return ids;
}

inline std::vector<float> as_float(const std::vector<int32_t>& v) { return {v.begin(), v.end()}; }

// Which expert path of the CUDA backend a call must take (Any: not checked).
enum class Path { Any, Small, Grouped, Large };

// Runs one case on both backends; returns the GPU output (to compare runs bit for bit).
inline std::vector<float> run_experts(MoePair& p, const MoePair::Experts& ex, const ExpertCase& c, int layer = 0,
                                      Path path = Path::Any) {
  SCOPED_TRACE(testing::Message() << c);
  const uint64_t seed = static_cast<uint64_t>(c.T * 1009 + c.E * 17 + c.k);
  const std::vector<int32_t> ids = make_ids(c, seed);
  const std::vector<float> w = random_vector(static_cast<size_t>(c.T * c.k), seed + 1, 0.05f, 1.0f);
  const std::vector<float> x = round_bf16(random_vector(static_cast<size_t>(c.T * c.H), seed + 2));

  const Tensor cout = p.cpu_f32(c.T, c.H, std::vector<float>(static_cast<size_t>(c.T * c.H), NAN));
  p.cpu().moe_experts(layer, p.cpu_f32(c.T, c.H, x), ex.cpu, p.cpu_i32(c.T, c.k, ids), p.cpu_f32(c.T, c.k, w), cout);
  const std::vector<float> want = MoePair::host(p.cpu(), cout);

  const GpuMat gx = p.gpu_mat(DType::BF16, c.T, c.H, x);
  const GpuMat gids = p.gpu_mat(DType::I32, c.T, c.k, as_float(ids));
  const GpuMat gw = p.gpu_mat(DType::F32, c.T, c.k, w);
  const GpuMat gout = p.gpu_mat(DType::BF16, c.T, c.H, {}, 8, 2);
  const CudaMoePathCounts before = cuda_moe_path_counts(p.gpu());
  p.gpu().moe_experts(layer, gx.view, ex.gpu, gids.view, gw.view, gout.view);
  const CudaMoePathCounts after = cuda_moe_path_counts(p.gpu());
  if (path != Path::Any) {
    const int64_t small = after.small - before.small, grouped = after.grouped - before.grouped,
                  large = after.large - before.large;
    EXPECT_EQ(small, path == Path::Small ? 1 : 0) << "small-batch path calls";
    EXPECT_EQ(grouped, path == Path::Grouped ? 1 : 0) << "grouped path calls";
    EXPECT_EQ(large, path == Path::Large ? 1 : 0) << "large-batch path calls";
  }
  const std::vector<float> got = MoePair::host(p.gpu(), gout.view);
  EXPECT_LT(normalised_error(got, want), kTolMoe);
  EXPECT_EQ(p.damaged(gout), 0) << "wrote outside the output";
  return got;
}

}  // namespace inferdesk::gputest
