// W8A8 rows with AVX-512 VNNI (vpdpbusd: unsigned x signed bytes, four products summed straight
// into int32, no int16 step to saturate). vpdpbusd wants one unsigned operand, so the weights are
// offset: w + 128 = w ^ 0x80 in [0, 255], and sum (w + 128) x = sum w x + 128 sum x, the last sum
// taken by the same instruction against bytes of 1. Compiled with -mavx512vnni; called only where
// int_vnni_supported().
#include <cstdint>
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "core/backend/cpu/int_kernels.h"

namespace inferdesk::cpu {
namespace {

template <int R, int TT>
void vnni_tile(const Int8Args& a, int64_t n, int64_t t0) {
  const int64_t K = a.K, kv = K - K % 64;
  const int8_t* wr[R];
  for (int r = 0; r < R; ++r) wr[r] = a.w + (n + r) * a.w_stride;
  const int8_t* xr[TT];
  for (int t = 0; t < TT; ++t) xr[t] = a.qx + (t0 + t) * K;
  __m512i acc[R][TT], xs[TT];
  for (int t = 0; t < TT; ++t) {
    xs[t] = _mm512_setzero_si512();
    for (int r = 0; r < R; ++r) acc[r][t] = _mm512_setzero_si512();
  }
  const __m512i flip = _mm512_set1_epi8(char(0x80)), one = _mm512_set1_epi8(1);
  for (int64_t k = 0; k < kv; k += 64) {
    __m512i xv[TT];
    for (int t = 0; t < TT; ++t) {
      xv[t] = _mm512_loadu_si512(xr[t] + k);
      xs[t] = _mm512_dpbusd_epi32(xs[t], one, xv[t]);
    }
    for (int r = 0; r < R; ++r) {
      _mm_prefetch(reinterpret_cast<const char*>(wr[r] + R * a.w_stride + k), _MM_HINT_T1);
      const __m512i u = _mm512_xor_si512(_mm512_loadu_si512(wr[r] + k), flip);
      for (int t = 0; t < TT; ++t) acc[r][t] = _mm512_dpbusd_epi32(acc[r][t], u, xv[t]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < TT; ++t) {
      int32_t s = _mm512_reduce_add_epi32(acc[r][t]) - 128 * _mm512_reduce_add_epi32(xs[t]);
      for (int64_t k = kv; k < K; ++k) s += static_cast<int32_t>(xr[t][k]) * static_cast<int32_t>(wr[r][k]);
      a.out[(t0 + t) * a.out_stride + n + r] = static_cast<float>(s) * (a.sx[t0 + t] * a.sw[n + r]) + a.bias[n + r];
    }
}

template <int R>
void vnni_rows_r(const Int8Args& a, int64_t n, int64_t t0, int64_t t1) {
  int64_t t = t0;
  for (; t + 2 <= t1; t += 2) vnni_tile<R, 2>(a, n, t);
  if (t < t1) vnni_tile<R, 1>(a, n, t);
}

}  // namespace

void int8_rows_vnni(const Int8Args& a, int64_t n0, int64_t n1) {
  constexpr int64_t kRowBlock = 32, kTokenBlock = 64;
  for (int64_t nb = n0; nb < n1; nb += kRowBlock) {
    const int64_t ne = nb + kRowBlock < n1 ? nb + kRowBlock : n1;
    for (int64_t tb = 0; tb < a.T; tb += kTokenBlock) {
      const int64_t te = tb + kTokenBlock < a.T ? tb + kTokenBlock : a.T;
      int64_t n = nb;
      for (; n + 4 <= ne; n += 4) vnni_rows_r<4>(a, n, tb, te);
      for (; n < ne; ++n) vnni_rows_r<1>(a, n, tb, te);
    }
  }
}

}  // namespace inferdesk::cpu
