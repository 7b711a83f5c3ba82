// E4M3 K/V tiles of the tensor-core attention kernels (attention_prefill.cu,
// attention_decode_mma.cu): how a tile lies in shared memory and how a lane turns it into F16 mma
// fragments (E4M3 -> F16 is exact; the layer's K scale is folded into the softmax scale, the V
// scale into the output). Not part of the public contract (attention.h).
//
// ldmatrix moves 16-bit elements, so it can neither build fragments from bytes nor transpose them
// (V). Each lane reads the bytes it needs with vector loads and converts them in registers, and two
// freedoms keep those loads wide:
// - Q K^T sums over the dims, so any permutation of the dims that Q and K share gives the same
//   scores: at k-step kk, lane tig (thread in group) takes dims k_byte(kk, tig) + 0..3 for the
//   k-columns 2 tig, 2 tig + 1, 2 tig + 8, 2 tig + 9 of the mma. For D <= 128 these are D / 4
//   contiguous bytes of a key row, for D 256 four 16-byte chunks 64 bytes apart.
// - The output dims of P V can be permuted if the store undoes it: lane group g (lane / 4) holds
//   owned dims o < D / 8, v_dim(o, g), chunks of min(16, D / 8) contiguous bytes of a key row; the
//   pair of keys a fragment register wants at one dim comes out of two such rows by a byte permute.
// Row pitches keep both reads free of bank conflicts: a K read's eight lanes of one 16-byte phase
// cover rows g and g + 1, a V read's cover rows 2 tig.
#pragma once

#include <cstdint>

#include "cuda/kernels/kv_fp8.cuh"

namespace inferdesk::cuda::attn {

template <int D>
struct Fp8Tile {
  static_assert(D == 32 || D == 64 || D == 128 || D == 256, "head_dim 32, 64, 128 or 256");
  static constexpr int kKPitch = D == 128 ? 144 : D == 256 ? 320 : D;  // bytes per key row of a K tile
  static constexpr int kVPitch = D + 16;                               // of a V tile
  static constexpr int kKWords = D / 16;                               // of a K row per lane: one per k-step
  static constexpr int kVWords = D / 32;                               // of a V row per lane: 4 owned dims each
  static constexpr int kVChunk = D / 8 < 16 ? D / 8 : 16;              // contiguous bytes of a lane's V part

  // The first dim (= byte) of word kk of lane tig's part of a K row.
  __device__ static constexpr int k_byte(int kk, int tig) {
    return D <= 128 ? (D / 4) * tig + 4 * kk : 64 * (kk / 4) + 16 * tig + 4 * (kk % 4);
  }
  __device__ static void load_k(const uint8_t* row, int tig, uint32_t (&w)[kKWords]) {
    if constexpr (D == 32) {
      const uint2 v = *reinterpret_cast<const uint2*>(row + k_byte(0, tig));
      w[0] = v.x;
      w[1] = v.y;
    } else {
#pragma unroll
      for (int c = 0; c < kKWords / 4; ++c) {
        const uint4 v = *reinterpret_cast<const uint4*>(row + k_byte(4 * c, tig));
        w[4 * c] = v.x;
        w[4 * c + 1] = v.y;
        w[4 * c + 2] = v.z;
        w[4 * c + 3] = v.w;
      }
    }
  }
  // The dims two fragment registers take from K word `w`: low half (first of the pair), high half.
  __device__ static uint32_t k_lo(uint32_t w) { return e4m3x2_to_f16x2(w); }
  __device__ static uint32_t k_hi(uint32_t w) { return e4m3x2_to_f16x2(w >> 16); }

  // The dim of lane group g's owned index o (o < D / 8).
  __device__ static constexpr int v_dim(int o, int g) { return kVChunk * (8 * (o / kVChunk) + g) + o % kVChunk; }
  __device__ static void load_v(const uint8_t* row, int g, uint32_t (&w)[kVWords]) {
    if constexpr (D == 32) {
      w[0] = *reinterpret_cast<const uint32_t*>(row + 4 * g);
    } else if constexpr (D == 64) {
      const uint2 v = *reinterpret_cast<const uint2*>(row + 8 * g);
      w[0] = v.x;
      w[1] = v.y;
    } else {
#pragma unroll
      for (int c = 0; c < kVWords / 4; ++c) {
        const uint4 v = *reinterpret_cast<const uint4*>(row + 16 * (8 * c + g));
        w[4 * c] = v.x;
        w[4 * c + 1] = v.y;
        w[4 * c + 2] = v.z;
        w[4 * c + 3] = v.w;
      }
    }
  }
  // (key a, key b) at owned dim o as f16x2 (key a in the low half), from the two keys' words; o
  // is a compile-time constant in the unrolled loops, and so is the byte selector.
  __device__ static uint32_t v_pair(const uint32_t (&a)[kVWords], const uint32_t (&b)[kVWords], int o) {
    const uint32_t p = __byte_perm(a[o / 4], b[o / 4], (o & 2) ? 0x7362 : 0x5140);
    return e4m3x2_to_f16x2((o & 1) ? p >> 16 : p);
  }
};

}  // namespace inferdesk::cuda::attn
