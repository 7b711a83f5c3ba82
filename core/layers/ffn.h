// The FFN blocks of a decoder layer over Backend ops: a dense SwiGLU MLP, and a mixture of experts
// (router softmax, top-k, routed SwiGLU experts, optional shared expert behind a sigmoid gate).
#pragma once

#include <cstdint>
#include <vector>

#include "core/backend/backend.h"
#include "core/layers/activations.h"

namespace inferdesk {

struct DenseFfnWeights {
  Buffer gate, up, down;
  Buffer gate_up;  // gate stacked over up (then gate and up are empty)
  int64_t inter() const { return gate_up.empty() ? gate.tensor().rows : gate_up.tensor().rows / 2; }
};

struct MoeWeights {
  Buffer router;                         // [experts, hidden]
  std::vector<DenseFfnWeights> experts;  // owning
  std::vector<ExpertWeights> views;      // the same tensors as passed to moe_experts
  DenseFfnWeights shared;                // qwen2_moe shared expert (empty otherwise)
  Buffer shared_gate;                    // [1, hidden]
};

// Fills views from experts; a stacked expert's gate and up views are the row halves of its
// gate_up weight (adjacent in memory, so a backend may run them as one GEMM).
void finish_moe(MoeWeights& moe);

// out = down(silu(gate(h)) * up(h)) for the rows of h. With next_norm (the next layer's input
// norm) the down projection also closes the residual branch: acts.x += out and
// acts.h = rms_norm(acts.x) * next_norm; it then returns true, else false.
bool dense_ffn(Backend& b, const DenseFfnWeights& f, const Tensor& h, Tensor out, const Tensor* next_norm, float eps,
               const ActivationBuffers& acts);

struct MoeRouting {
  int32_t top_k = 0;       // experts per token
  bool normalize = false;  // renormalise the chosen weights to sum 1 (norm_topk_prob)
};

// out = the routed experts' weighted sum for the rows of h (+ the gated shared expert). Counts
// the routing per layer on the backend (Backend::moe_experts).
void moe_ffn(Backend& b, int32_t layer, const MoeWeights& m, const MoeRouting& routing, const Tensor& h, Tensor out,
             const ActivationBuffers& acts);

}  // namespace inferdesk
