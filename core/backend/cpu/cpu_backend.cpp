// CpuBackend: construction, memory, step input and the simple row-wise ops.
#include "core/backend/cpu/cpu_backend_impl.h"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/util/error.h"
#include "core/util/fp8.h"
#include "core/util/splitmix.h"

namespace inferdesk {
namespace cpu {

namespace {

constexpr int64_t kMaxElements = int64_t{1} << 40;  // sanity bound on one allocation

void* aligned_bytes(int64_t bytes) {
  size_t n = static_cast<size_t>((std::max<int64_t>(bytes, 1) + 63) / 64 * 64);
  return std::aligned_alloc(64, n);
}

constexpr int64_t kHugeMin = int64_t{4} << 20;
constexpr int64_t kHugePage = int64_t{2} << 20;

int64_t huge_rounded(int64_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }

char* row_ptr(const Tensor& t, int64_t r) {
  return static_cast<char*>(t.data) + r * t.stride * static_cast<int64_t>(t.element_size());
}

float* frow(const Tensor& t, int64_t r) { return reinterpret_cast<float*>(row_ptr(t, r)); }

Isa resolve_isa(CpuIsa want) {
  Isa have = detect_isa();
  switch (want) {
    case CpuIsa::Auto: return have;
    case CpuIsa::Scalar: return Isa::Scalar;
    case CpuIsa::Avx2:
      if (have == Isa::Scalar) throw Error(ErrorCode::Unsupported, "this CPU has no AVX2/FMA");
      return Isa::Avx2;
    case CpuIsa::Avx512:
      if (have != Isa::Avx512) throw Error(ErrorCode::Unsupported, "this CPU has no AVX-512");
      return Isa::Avx512;
  }
  return have;
}

}  // namespace

void* alloc_zeroed(int64_t bytes) {
  if (bytes < kHugeMin) {
    void* p = aligned_bytes(bytes);
    if (p) std::memset(p, 0, static_cast<size_t>(bytes));
    return p;
  }
  // Map 2 MiB more than needed, then trim to a 2 MiB-aligned window.
  const size_t size = static_cast<size_t>(huge_rounded(bytes));
  void* raw = mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t base = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (base + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > base) munmap(raw, aligned - base);
  const uintptr_t end = base + size + kHugePage;
  if (end > aligned + size) munmap(reinterpret_cast<void*>(aligned + size), end - (aligned + size));
  madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);  // advisory: failure is fine
  return reinterpret_cast<void*>(aligned);
}

void free_zeroed(void* p, int64_t bytes) {
  if (!p) return;
  if (bytes < kHugeMin) {
    std::free(p);
  } else {
    munmap(p, static_cast<size_t>(huge_rounded(bytes)));
  }
}

float* Scratch::floats(int64_t n) {
  if (n > size_) {
    void* p = aligned_bytes(n * 4);
    if (!p) throw Error(ErrorCode::OutOfMemory, "CPU backend: cannot allocate scratch memory");
    data_.reset(static_cast<float*>(p));
    size_ = n;
  }
  return data_.get();
}

void Scratch::Free::operator()(float* p) const { std::free(p); }

CpuBackend::CpuBackend(const CpuBackendOptions& options)
    : pool_(options.num_threads),
      k_(kernels_for(resolve_isa(options.isa))),
      ik_(int_kernels_for(k_.isa)),
      counters_(std::make_shared<MemoryCounters>()) {}

std::string CpuBackend::name() const {
  return std::string("cpu (") + isa_name(k_.isa) + ", " + std::to_string(pool_.size()) +
         (pool_.size() == 1 ? " thread)" : " threads)");
}

// ---- memory -----------------------------------------------------------------------------------

Buffer CpuBackend::alloc(DType dtype, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0 || (cols > 0 && rows > kMaxElements / cols))
    throw Error(ErrorCode::InvalidArgument,
                "CPU backend: cannot allocate a tensor of " + std::to_string(rows) + " x " + std::to_string(cols));
  if (dtype != DType::F32 && dtype != DType::I32 && dtype != DType::BF16 && dtype != DType::F16 &&
      dtype != DType::F8E4M3 && dtype != DType::I8)
    throw Error(ErrorCode::Unsupported, std::string("CPU backend: cannot allocate dtype ") + dtype_name(dtype));
  const int64_t bytes = rows * cols * static_cast<int64_t>(dtype_size(dtype));
  void* p = alloc_zeroed(bytes);
  if (!p)
    throw Error(ErrorCode::OutOfMemory, "CPU backend: out of memory allocating " + std::to_string(bytes) + " bytes");
  counters_->activations += bytes;
  std::shared_ptr<void> owner(p, [c = counters_, bytes](void* q) {
    c->activations -= bytes;
    free_zeroed(q, bytes);
  });
  return Buffer(Tensor{p, dtype, rows, cols, cols}, std::move(owner));
}

Buffer CpuBackend::load_weight(const HostTensor& host, int64_t rows, int64_t cols) {
  const std::string what = "weight '" + host.name + "'";
  // I8 and U8: the codes of integer weights (quant.h), which only ever come with their QuantInfo.
  if (host.dtype != DType::F32 && host.dtype != DType::F16 && host.dtype != DType::BF16 &&
      host.dtype != DType::F8E4M3 && host.dtype != DType::I8 && host.dtype != DType::U8)
    throw Error(ErrorCode::Unsupported, what + ": dtype " + dtype_name(host.dtype) +
                                            " is not supported by the CPU backend (F32, F16, BF16, F8_E4M3, I8, U8)");
  if (rows < 0 || cols < 0 || (cols > 0 && rows > kMaxElements / cols) || rows * cols != host.numel())
    throw Error(ErrorCode::Format,
                what + ": shape does not match a " + std::to_string(rows) + " x " + std::to_string(cols) + " view");
  const int64_t bytes = host.numel() * static_cast<int64_t>(dtype_size(host.dtype));
  if (static_cast<int64_t>(host.nbytes) != bytes || (bytes > 0 && host.data == nullptr))
    throw Error(ErrorCode::Format,
                what + ": holds " + std::to_string(host.nbytes) + " bytes, its shape needs " + std::to_string(bytes));
  counters_->weights += bytes;
  // Non-owning: the host memory (an mmapped file) must outlive the model. The owner only keeps
  // the byte count honest.
  std::shared_ptr<void> owner(counters_.get(), [c = counters_, bytes](void*) { c->weights -= bytes; });
  void* data = const_cast<std::byte*>(host.data);
  return Buffer(Tensor{data, host.dtype, rows, cols, cols}, std::move(owner));
}

Buffer CpuBackend::load_scales(const float* values, int64_t rows, int64_t cols) {
  Buffer b = alloc(DType::F32, rows, cols);
  std::memcpy(b.tensor().data, values, static_cast<size_t>(rows * cols) * 4);
  return b;
}

Buffer CpuBackend::load_indices(const int32_t* values, int64_t n) {
  Buffer b = alloc(DType::I32, 1, n);
  std::memcpy(b.tensor().data, values, static_cast<size_t>(n) * 4);
  return b;
}

void CpuBackend::fill_random(Tensor t, uint64_t seed, float scale) {
  if (t.dtype != DType::F32 && t.dtype != DType::BF16 && t.dtype != DType::F16 && t.dtype != DType::F8E4M3)
    throw Error(ErrorCode::InvalidArgument, "fill_random: only float tensors can be filled");
  const uint64_t base = splitmix64(seed);
  for_rows(t.rows, t.cols * 8, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      char* row = row_ptr(t, r);
      for (int64_t c = 0; c < t.cols; ++c) {
        uint64_t bits = splitmix64(base ^ static_cast<uint64_t>(r * t.cols + c));
        // 24 random bits -> [-1, 1)
        float u = static_cast<float>(bits >> 40) * (2.0f / 16777216.0f) - 1.0f;
        float v = u * scale;
        if (t.dtype == DType::F32) {
          reinterpret_cast<float*>(row)[c] = v;
        } else if (t.dtype == DType::F8E4M3) {
          reinterpret_cast<uint8_t*>(row)[c] = f32_to_fp8_e4m3(v);
        } else {
          uint16_t h = t.dtype == DType::BF16 ? f32_to_bf16(v) : f32_to_f16(v);
          std::memcpy(row + c * 2, &h, 2);
        }
      }
    }
  });
}

int64_t CpuBackend::kv_block_bytes(const KvCacheShape& s) const {
  return int64_t{2} * s.num_layers * s.block_size * s.num_kv_heads * s.head_dim * 4;
}

void CpuBackend::init_kv_cache(const KvCacheShape& s) {
  if (s.num_layers <= 0 || s.num_blocks <= 0 || s.block_size <= 0 || s.num_kv_heads <= 0 || s.head_dim <= 0)
    throw Error(ErrorCode::InvalidArgument, "init_kv_cache: every dimension must be positive");
  const int64_t per_layer = int64_t{s.num_blocks} * s.block_size * s.num_kv_heads * s.head_dim;
  if (per_layer > kMaxElements / (2 * s.num_layers))
    throw Error(ErrorCode::OutOfMemory, "init_kv_cache: the requested cache is too large");
  const int64_t bytes = per_layer * 2 * s.num_layers * 4;
  kv_.reset();
  // Large caches are mapped lazily: pages are only backed as tokens are written.
  float* p = static_cast<float*>(alloc_zeroed(bytes));
  if (!p)
    throw Error(ErrorCode::OutOfMemory,
                "init_kv_cache: cannot allocate " + std::to_string(bytes >> 20) + " MiB for the KV cache");
  kv_ = std::shared_ptr<float>(p, [bytes](float* q) { free_zeroed(q, bytes); });
  if (!supports_kv_dtype(s.dtype)) throw Error(ErrorCode::Unsupported, "init_kv_cache: unsupported KV cache dtype");
  check_kv_scales(s);
  kv_shape_ = s;
  kv_layer_elems_ = per_layer;
}

// No device: device_total and device_used stay 0. The buffers live in the process's memory, whose
// resident size (EngineStats::process_rss_bytes) is what they cost: the weights are mmapped file
// pages and the KV cache is mapped lazily, so the sums below are reservations, not use.
MemoryInfo CpuBackend::memory_info() const {
  MemoryInfo m;
  m.weights = counters_->weights.load();
  m.activations = counters_->activations.load();
  m.kv_cache = kv_ ? kv_layer_elems_ * 2 * kv_shape_.num_layers * 4 : 0;
  return m;
}

StepPlan CpuBackend::begin_step(const StepInput& step) {
  step_ = step;
  ++step_id_;
  return StepPlan{step.num_tokens(), static_cast<int32_t>(step.logit_rows.size()), false};
}

void CpuBackend::for_rows(int64_t rows, int64_t cost_per_row, const std::function<void(int64_t, int64_t)>& fn) {
  if (rows <= 0) return;
  if (pool_.size() == 1 || rows < 2 || rows * cost_per_row < 32768) {
    fn(0, rows);
    return;
  }
  pool_.run([&](int thread, int n) {
    int64_t b, e;
    ThreadPool::split(rows, 1, thread, n, &b, &e);
    if (b < e) fn(b, e);
  });
}

// ---- simple ops -------------------------------------------------------------------------------

void CpuBackend::embed(const Tensor& table, Tensor out) {
  const int64_t T = step_.num_tokens();
  for (int64_t i = 0; i < T; ++i) {
    const int32_t id = step_.token_ids[i];
    if (id < 0 || id >= table.rows)
      throw Error(ErrorCode::InvalidArgument, "token id " + std::to_string(id) + " is outside the embedding table (" +
                                                  std::to_string(table.rows) + " rows)");
  }
  for_rows(T, table.cols, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i)
      k_.convert_row(row_ptr(table, step_.token_ids[i]), table.dtype, frow(out, i), table.cols);
  });
}

void CpuBackend::rms_norm(const Tensor& x, const Tensor& w, float eps, Tensor out) {
  for_rows(x.rows, x.cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) k_.rms_norm_row(frow(x, r), w.data, w.dtype, eps, frow(out, r), x.cols);
  });
}

void CpuBackend::add_rms_norm(Tensor residual, const Tensor& x, const Tensor& w, float eps, Tensor out) {
  for_rows(x.rows, x.cols * 2, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* res = frow(residual, r);
      k_.axpy_row(1.0f, frow(x, r), res, x.cols);
      k_.rms_norm_row(res, w.data, w.dtype, eps, frow(out, r), x.cols);
    }
  });
}

void CpuBackend::silu_mul(const Tensor& gate, const Tensor& up, Tensor out) {
  for_rows(gate.rows, gate.cols * 4, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) k_.silu_mul_row(frow(gate, r), frow(up, r), frow(out, r), gate.cols);
  });
}

void CpuBackend::add(Tensor inout, const Tensor& x) {
  for_rows(x.rows, x.cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) k_.axpy_row(1.0f, frow(x, r), frow(inout, r), x.cols);
  });
}

void CpuBackend::gather_rows(const Tensor& x, Tensor out) {
  for (size_t j = 0; j < step_.logit_rows.size(); ++j) {
    const int32_t r = step_.logit_rows[j];
    if (r < 0 || r >= x.rows)
      throw Error(ErrorCode::Internal, "gather_rows: logit row " + std::to_string(r) + " is outside the tensor's " +
                                           std::to_string(x.rows) + " rows");
    std::memcpy(row_ptr(out, static_cast<int64_t>(j)), row_ptr(x, r), static_cast<size_t>(x.cols) * x.element_size());
  }
}

void CpuBackend::sigmoid_gate_add(Tensor out, const Tensor& x, const Tensor& gate) {
  for (int64_t t = 0; t < x.rows; ++t) {
    const float g = frow(gate, t)[0];
    const float s = 1.0f / (1.0f + std::exp(-g));
    k_.axpy_row(s, frow(x, t), frow(out, t), x.cols);
  }
}

void CpuBackend::to_host(const Tensor& t, float* dst) {
  for (int64_t r = 0; r < t.rows; ++r) k_.convert_row(row_ptr(t, r), t.dtype, dst + r * t.cols, t.cols);
}

}  // namespace cpu

std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions& options) {
  return std::make_unique<cpu::CpuBackend>(options);
}

std::unique_ptr<Backend> make_cpu_backend(int num_threads) {
  CpuBackendOptions o;
  o.num_threads = num_threads;
  return make_cpu_backend(o);
}

bool cpu_isa_supported(CpuIsa isa) {
  cpu::Isa have = cpu::detect_isa();
  switch (isa) {
    case CpuIsa::Auto:
    case CpuIsa::Scalar: return true;
    case CpuIsa::Avx2: return have != cpu::Isa::Scalar;
    case CpuIsa::Avx512: return have == cpu::Isa::Avx512;
  }
  return false;
}

}  // namespace inferdesk
