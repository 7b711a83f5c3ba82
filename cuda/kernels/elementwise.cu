// Elementwise and row-wise kernels: embedding rows, RMSNorm (+ fused residual add), SiLU * up,
// in-place add, row gather, deterministic random fill and conversion to BF16.
//
// Elementwise work is cut into chunks of 8 consecutive elements of one row; a thread handles one
// chunk per grid-stride step. A chunk is moved with 16-byte loads/stores when every tensor of the
// op allows it (16-byte aligned base and a row stride that keeps rows 16-byte aligned, checked on
// the host) and the chunk is whole; otherwise element by element. Row norms use one warp per row
// for rows up to 1024 columns and one block per row above that, accumulating in F32.
//
// Every kernel is launched with launch_kernel (programmatic dependent launch on sm_90, see
// common.cuh): it lets the next kernel be scheduled at once (pdl_launch_dependents at the start) and
// calls pdl_wait() before touching anything but immutable data; the norms load their weight
// vector before the wait.
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/util/splitmix.h"
#include "cuda/kernels/common.cuh"
#include "cuda/kernels/common.h"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/elementwise.h"
#include "cuda/kernels/launch.h"
#include "cuda/kernels/wide_norm.h"

namespace inferdesk::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kChunk = 8;                  // elements per chunk
constexpr int64_t kWarpRowMaxCols = 1024;  // rms_norm: one warp per row up to this width
constexpr int kNormWarpsPerBlock = 4;

// 8 consecutive elements starting at p. vec: whole chunk with 16-byte accesses (alignment checked
// by the launcher); else n <= 8 scalar accesses (missing elements read as 0).
template <typename T>
__device__ __forceinline__ void load8(const T* p, int n, bool vec, float (&v)[kChunk]) {
  if (vec) {
    if constexpr (sizeof(T) == 4) {
      const float4 a = reinterpret_cast<const float4*>(p)[0];
      const float4 b = reinterpret_cast<const float4*>(p)[1];
      v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
      v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
    } else {
      alignas(16) T e[kChunk];
      *reinterpret_cast<uint4*>(e) = *reinterpret_cast<const uint4*>(p);
#pragma unroll
      for (int i = 0; i < kChunk; ++i) v[i] = to_float(e[i]);
    }
  } else {
#pragma unroll
    for (int i = 0; i < kChunk; ++i) v[i] = i < n ? to_float(p[i]) : 0.0f;
  }
}

template <typename T>
__device__ __forceinline__ void store8(T* p, int n, bool vec, const float (&v)[kChunk]) {
  if (vec) {
    if constexpr (sizeof(T) == 4) {
      reinterpret_cast<float4*>(p)[0] = make_float4(v[0], v[1], v[2], v[3]);
      reinterpret_cast<float4*>(p)[1] = make_float4(v[4], v[5], v[6], v[7]);
    } else {
      alignas(16) T e[kChunk];
#pragma unroll
      for (int i = 0; i < kChunk; ++i) e[i] = from_float<T>(v[i]);
      *reinterpret_cast<uint4*>(p) = *reinterpret_cast<const uint4*>(e);
    }
  } else {
#pragma unroll
    for (int i = 0; i < kChunk; ++i)
      if (i < n) p[i] = from_float<T>(v[i]);
  }
}

// ------------------------------------------------------------------------ host-side helpers

// Calls f(T{}) with T = float or bf16 as dt says.
template <class F>
void with_dt(Dt dt, F&& f) {
  if (dt == Dt::F32)
    f(float{});
  else
    f(bf16{});
}

// Whether rows of a [rows, *] tensor of T at p with this stride can be read in 16-byte chunks.
template <typename T>
bool vec_ok(const void* p, int64_t stride, int64_t rows) {
  if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return rows <= 1 || (stride * static_cast<int64_t>(sizeof(T))) % 16 == 0;
}

unsigned grid_for(int64_t work, int threads) {
  const int64_t blocks = (work + threads - 1) / threads;
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, int64_t{1} << 20));
}

// ------------------------------------------------------------ chunked elementwise framework

// Runs op(row, col0, n) for every chunk (n = elements of the chunk, 8 except at a row's end) of a [rows, cols]
// iteration space, grid-stride.
template <class Op>
__global__ void __launch_bounds__(kThreads) chunk_kernel(Op op, int64_t rows, int64_t cols) {
  pdl_launch_dependents();
  pdl_wait();  // every op reads activations or step metadata, or writes
  const int64_t per_row = (cols + kChunk - 1) / kChunk;
  const int64_t total = rows * per_row;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const int64_t r = i / per_row;
    const int64_t c0 = (i - r * per_row) * kChunk;
    const int n = static_cast<int>(min(static_cast<int64_t>(kChunk), cols - c0));
    op(r, c0, n);
  }
}

template <class Op>
void launch_chunks(const Op& op, int64_t rows, int64_t cols, const Launch& launch, const char* what) {
  if (rows <= 0 || cols <= 0) return;
  const int64_t chunks = rows * ((cols + kChunk - 1) / kChunk);
  launch_kernel(what, chunk_kernel<Op>, dim3(grid_for(chunks, kThreads)), dim3(kThreads), 0, launch, op, rows, cols);
}

// out = f(a, b) elementwise. out may alias a or b (each element is read before the same thread
// writes it).
template <typename TA, typename TB, typename TO, class F>
struct BinaryOp {
  const TA* a;
  int64_t a_stride;
  const TB* b;
  int64_t b_stride;
  TO* out;
  int64_t out_stride;
  bool vec;
  __device__ void operator()(int64_t r, int64_t c0, int n) const {
    const bool v8 = vec && n == kChunk;
    float va[kChunk], vb[kChunk];
    load8(a + r * a_stride + c0, n, v8, va);
    load8(b + r * b_stride + c0, n, v8, vb);
#pragma unroll
    for (int i = 0; i < kChunk; ++i) va[i] = F::apply(va[i], vb[i]);
    store8(out + r * out_stride + c0, n, v8, va);
  }
};

struct SiluMulF {
  __device__ static float apply(float g, float u) { return silu(g) * u; }
};
struct AddF {
  __device__ static float apply(float a, float b) { return a + b; }
};

template <class F>
void launch_binary(const Mat& a, const Mat& b, const Mat& out, const Launch& launch, const char* what) {
  with_dt(a.dt, [&](auto ta) {
    using TA = decltype(ta);
    with_dt(b.dt, [&](auto tb) {
      using TB = decltype(tb);
      with_dt(out.dt, [&](auto to) {
        using TO = decltype(to);
        const bool vec = vec_ok<TA>(a.data, a.stride, a.rows) && vec_ok<TB>(b.data, b.stride, b.rows) &&
                         vec_ok<TO>(out.data, out.stride, out.rows);
        BinaryOp<TA, TB, TO, F> op{static_cast<const TA*>(a.data),
                                   a.stride,
                                   static_cast<const TB*>(b.data),
                                   b.stride,
                                   static_cast<TO*>(out.data),
                                   out.stride,
                                   vec};
        launch_chunks(op, out.rows, out.cols, launch, what);
      });
    });
  });
}

// out[r, :] = x[idx[r], :] (embedding rows, logit rows); an index outside x gives zeros (the
// caller validates indices; this only keeps a bad one from reading stray memory).
template <typename TX, typename TO>
struct GatherOp {
  const TX* x;
  int64_t x_stride, x_rows;
  const int32_t* idx;
  TO* out;
  int64_t out_stride;
  bool vec;
  __device__ void operator()(int64_t r, int64_t c0, int n) const {
    const bool v8 = vec && n == kChunk;
    const int32_t src = idx[r];
    float v[kChunk];
    if (src < 0 || src >= x_rows) {
#pragma unroll
      for (int i = 0; i < kChunk; ++i) v[i] = 0.0f;
    } else {
      load8(x + src * x_stride + c0, n, v8, v);
    }
    store8(out + r * out_stride + c0, n, v8, v);
  }
};

// WideNorm (wide_norm.h) finished outside a consumer GEMM: h[r] *= rms_scale(sum_t ss[t][r], k, eps)
// (each chunk sums its row's partials as the consumer does, wide_norm_row_sum: the same scale).
struct NormScaleOp {
  bf16* h;
  int64_t stride;
  const float* ss;
  int32_t tiles, norm_k;
  float eps;
  bool vec;
  __device__ void operator()(int64_t r, int64_t c0, int n) const {
    const float s = rms_scale(wide_norm_row_sum(ss, tiles, static_cast<int>(r)), static_cast<float>(norm_k), eps);
    const bool v8 = vec && n == kChunk;
    float v[kChunk];
    load8(h + r * stride + c0, n, v8, v);
#pragma unroll
    for (int i = 0; i < kChunk; ++i) v[i] *= s;
    store8(h + r * stride + c0, n, v8, v);
  }
};

// The CPU backend's generator (cpu_backend.cpp, fill_random): splitmix64 of (splitmix64(seed)
// XOR logical element index), top 24 bits mapped to [-1, 1), times scale. Same seed and shape give
// bit-identical values on both backends, whatever the launch configuration or row stride
// (one splitmix64, core/util/splitmix.h).

template <typename T>
struct FillOp {
  T* data;
  int64_t stride, cols;
  uint64_t base;
  float scale;
  bool vec;
  __device__ void operator()(int64_t r, int64_t c0, int n) const {
    float v[kChunk];
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      const uint64_t bits = splitmix64(base ^ static_cast<uint64_t>(r * cols + c0 + i));
      // Exact in F32 (k * 2^-23 - 1 with k < 2^24), then one rounding for the scale, as on the CPU.
      const float u = __fsub_rn(__fmul_rn(static_cast<float>(bits >> 40), 2.0f / 16777216.0f), 1.0f);
      v[i] = __fmul_rn(u, scale);
    }
    store8(data + r * stride + c0, n, vec && n == kChunk, v);
  }
};

template <typename TS>
struct ConvertOp {
  const TS* src;
  bf16* dst;
  bool vec;
  __device__ void operator()(int64_t, int64_t c0, int n) const {
    const bool v8 = vec && n == kChunk;
    float v[kChunk];
    load8(src + c0, n, v8, v);
    store8(dst + c0, n, v8, v);
  }
};

// ---------------------------------------------------------------------------- row norms

// Sum over the block (blockDim.x a multiple of 32); `sh` holds 32 floats.
__device__ __forceinline__ float block_sum(float v, float* sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_sum(v);
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  float t = threadIdx.x < (blockDim.x >> 5) ? sh[threadIdx.x] : 0.0f;
  if (warp == 0) {
    t = warp_sum(t);
    if (lane == 0) sh[0] = t;
  }
  __syncthreads();
  return sh[0];
}

// out = src / sqrt(mean(src^2) + eps) * w per row, where src = x, or with kAdd src = residual + x
// (written back to residual first). A thread owns the chunks tid + j * nthreads of its row; the
// first kRegChunks of them (so all of a row of up to 8192 columns with a block per row, 512 with
// a warp per row) stay in registers between the two passes, with their weights loaded before
// pdl_wait() (the weight is immutable); further chunks are read again in the second pass. x (or residual) may alias
// out: every element is read by the thread that later overwrites it, and the reduction between the passes orders all
// reads of a row before any write of it. Plain loads only (no read-only cache path) for the same reason.
constexpr int kRegChunks = 2;

template <bool kAdd, bool kWarpPerRow, typename TX, typename TO>
__global__ void rms_norm_kernel(float* residual, int64_t res_stride, const TX* x, int64_t x_stride, const bf16* w,
                                float eps, TO* out, int64_t out_stride, int64_t rows, int64_t cols, bool vec) {
  __shared__ float sh[32];
  int64_t row;
  int tid, nthreads;
  if constexpr (kWarpPerRow) {
    row = static_cast<int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
    tid = threadIdx.x & 31;
    nthreads = 32;
  } else {
    row = blockIdx.x;
    tid = threadIdx.x;
    nthreads = blockDim.x;
  }
  // Elements of register chunk j: at column reg_c(j), reg_n(j) of them (0: none).
  auto reg_c = [&](int j) { return (static_cast<int64_t>(tid) + static_cast<int64_t>(j) * nthreads) * kChunk; };
  auto reg_n = [&](int j) { return static_cast<int>(max(int64_t{0}, min(int64_t{kChunk}, cols - reg_c(j)))); };
  float wv[kRegChunks][kChunk], v[kRegChunks][kChunk];
#pragma unroll
  for (int j = 0; j < kRegChunks; ++j) {
    const int n = reg_n(j);
    load8(w + (n > 0 ? reg_c(j) : 0), n, vec && n == kChunk, wv[j]);
  }
  pdl_launch_dependents();
  pdl_wait();
  if (kWarpPerRow && row >= rows) return;  // whole warp leaves; no block-wide barrier in this variant

  const TX* xr = x + row * x_stride;
  float* rr = kAdd ? residual + row * res_stride : nullptr;
  TO* outr = out + row * out_stride;
  // src chunk at column c (n elements) into s; with kAdd also written back to the residual.
  auto load_src = [&](int64_t c, int n, float(&s)[kChunk]) {
    const bool v8 = vec && n == kChunk;
    load8(xr + c, n, v8, s);
    if constexpr (kAdd) {
      float r[kChunk];
      load8(rr + c, n, v8, r);
#pragma unroll
      for (int i = 0; i < kChunk; ++i) s[i] += r[i];
      store8(rr + c, n, v8, s);
    }
  };
  auto store_out = [&](int64_t c, int n, const float(&s)[kChunk], const float(&wc)[kChunk], float inv) {
    float o[kChunk];
#pragma unroll
    for (int i = 0; i < kChunk; ++i) o[i] = wc[i] * (s[i] * inv);
    store8(outr + c, n, vec && n == kChunk, o);
  };
  const int64_t rest = (static_cast<int64_t>(tid) + int64_t{kRegChunks} * nthreads) * kChunk;
  const int64_t step = static_cast<int64_t>(nthreads) * kChunk;

  float ss = 0.0f;
#pragma unroll
  for (int j = 0; j < kRegChunks; ++j) {
    const int n = reg_n(j);
    if (n <= 0) continue;
    load_src(reg_c(j), n, v[j]);
#pragma unroll
    for (int i = 0; i < kChunk; ++i) ss += v[j][i] * v[j][i];  // missing elements are 0
  }
  for (int64_t c = rest; c < cols; c += step) {
    float s[kChunk];
    load_src(c, static_cast<int>(min(int64_t{kChunk}, cols - c)), s);
#pragma unroll
    for (int i = 0; i < kChunk; ++i) ss += s[i] * s[i];
  }
  if constexpr (kWarpPerRow)
    ss = warp_sum(ss);
  else
    ss = block_sum(ss, sh);
  const float inv = rms_scale(ss, static_cast<float>(cols), eps);
#pragma unroll
  for (int j = 0; j < kRegChunks; ++j) {
    const int n = reg_n(j);
    if (n > 0) store_out(reg_c(j), n, v[j], wv[j], inv);
  }
  for (int64_t c = rest; c < cols; c += step) {
    const int n = static_cast<int>(min(int64_t{kChunk}, cols - c));
    const bool v8 = vec && n == kChunk;
    float s[kChunk], wc[kChunk];
    if constexpr (kAdd)
      load8(rr + c, n, v8, s);
    else
      load8(xr + c, n, v8, s);
    load8(w + c, n, v8, wc);
    store_out(c, n, s, wc, inv);
  }
}

template <bool kAdd, typename TX, typename TO>
void launch_rms_norm(const char* what, float* residual, int64_t res_stride, const Mat& x, const bf16* w, float eps,
                     const Mat& out, bool vec, const Launch& launch) {
  const auto* xp = static_cast<const TX*>(x.data);
  auto* op = static_cast<TO*>(out.data);
  if (x.cols <= kWarpRowMaxCols) {
    const int threads = 32 * kNormWarpsPerBlock;
    const auto blocks = static_cast<unsigned>((x.rows + kNormWarpsPerBlock - 1) / kNormWarpsPerBlock);
    launch_kernel(what, rms_norm_kernel<kAdd, true, TX, TO>, dim3(blocks), dim3(threads), 0, launch, residual,
                  res_stride, xp, x.stride, w, eps, op, out.stride, x.rows, x.cols, vec);
  } else {
    const int64_t chunks = (x.cols + kChunk - 1) / kChunk;
    const int threads = static_cast<int>(std::clamp<int64_t>((chunks + 31) / 32 * 32, 64, 512));
    launch_kernel(what, rms_norm_kernel<kAdd, false, TX, TO>, dim3(static_cast<unsigned>(x.rows)), dim3(threads), 0,
                  launch, residual, res_stride, xp, x.stride, w, eps, op, out.stride, x.rows, x.cols, vec);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------- launchers

void embed_rows(const Mat& table, const int32_t* token_ids, Mat out, const Launch& launch) {
  if (table.dt != Dt::BF16) unsupported_config("embed_rows: the table must be BF16");
  gather_rows(table, token_ids, out, launch);
}

void rms_norm(const Mat& x, const bf16* w, float eps, Mat out, const Launch& launch) {
  if (x.rows <= 0 || x.cols <= 0) return;
  with_dt(x.dt, [&](auto tx) {
    using TX = decltype(tx);
    with_dt(out.dt, [&](auto to) {
      using TO = decltype(to);
      const bool vec = vec_ok<TX>(x.data, x.stride, x.rows) && vec_ok<TO>(out.data, out.stride, out.rows) &&
                       vec_ok<bf16>(w, 0, 1);
      launch_rms_norm<false, TX, TO>("rms_norm", nullptr, 0, x, w, eps, out, vec, launch);
    });
  });
}

void add_rms_norm(Mat residual, const Mat& x, const bf16* w, float eps, Mat out, const Launch& launch) {
  if (x.rows <= 0 || x.cols <= 0) return;
  if (residual.dt != Dt::F32) unsupported_config("add_rms_norm: the residual must be F32");
  auto* res = static_cast<float*>(residual.data);
  with_dt(x.dt, [&](auto tx) {
    using TX = decltype(tx);
    with_dt(out.dt, [&](auto to) {
      using TO = decltype(to);
      const bool vec = vec_ok<float>(res, residual.stride, residual.rows) && vec_ok<TX>(x.data, x.stride, x.rows) &&
                       vec_ok<TO>(out.data, out.stride, out.rows) && vec_ok<bf16>(w, 0, 1);
      launch_rms_norm<true, TX, TO>("add_rms_norm", res, residual.stride, x, w, eps, out, vec, launch);
    });
  });
}

void silu_mul(const Mat& gate, const Mat& up, Mat out, const Launch& launch) {
  launch_binary<SiluMulF>(gate, up, out, launch, "silu_mul");
}

void add_inplace(Mat inout, const Mat& x, const Launch& launch) {
  launch_binary<AddF>(inout, x, inout, launch, "add_inplace");
}

void wide_norm_scale_rows(Mat h, const float* ss, int32_t tiles, int32_t norm_k, float eps, const Launch& launch) {
  if (h.dt != Dt::BF16 || h.rows > kWideNormRows || tiles < 1 || norm_k < 1)
    unsupported_config("wide_norm_scale_rows: BF16 rows <= " + std::to_string(kWideNormRows));
  NormScaleOp op{static_cast<bf16*>(h.data), h.stride, ss, tiles, norm_k, eps, vec_ok<bf16>(h.data, h.stride, h.rows)};
  launch_chunks(op, h.rows, h.cols, launch, "wide_norm_scale_rows");
}

void gather_rows(const Mat& x, const int32_t* rows_idx, Mat out, const Launch& launch) {
  with_dt(x.dt, [&](auto tx) {
    using TX = decltype(tx);
    with_dt(out.dt, [&](auto to) {
      using TO = decltype(to);
      const bool vec = vec_ok<TX>(x.data, x.stride, x.rows) && vec_ok<TO>(out.data, out.stride, out.rows);
      GatherOp<TX, TO> op{static_cast<const TX*>(x.data), x.stride,   x.rows, rows_idx,
                          static_cast<TO*>(out.data),     out.stride, vec};
      launch_chunks(op, out.rows, out.cols, launch, "gather_rows");
    });
  });
}

void fill_random(Mat t, uint64_t seed, float scale, const Launch& launch) {
  const uint64_t base = splitmix64(seed);
  with_dt(t.dt, [&](auto tt) {
    using T = decltype(tt);
    FillOp<T> op{static_cast<T*>(t.data), t.stride, t.cols, base, scale, vec_ok<T>(t.data, t.stride, t.rows)};
    launch_chunks(op, t.rows, t.cols, launch, "fill_random");
  });
}

void convert_to_bf16(const void* src, int32_t src_kind, bf16* dst, int64_t n, const Launch& launch) {
  auto run = [&](auto ts) {
    using TS = decltype(ts);
    ConvertOp<TS> op{static_cast<const TS*>(src), dst, vec_ok<TS>(src, 0, 1) && vec_ok<bf16>(dst, 0, 1)};
    launch_chunks(op, 1, n, launch, "convert_to_bf16");
  };
  switch (src_kind) {
    case 0: run(float{}); break;
    case 1: run(bf16{}); break;
    case 2: run(__half{}); break;
    default: unsupported_config("convert_to_bf16: source kind " + std::to_string(src_kind));
  }
}

}  // namespace inferdesk::cuda
