// Activation buffers of a decoder step, shared by the blocks in core/layers. Whoever runs the
// layers allocates them for its largest step (rows) and widest layer (columns); a block uses rows
// [0, T) of the ones it needs and the leading columns of the FFN buffers.
#pragma once

#include "core/backend/backend.h"

namespace inferdesk {

// The residual stream x, the router logits and routing weights, and the shared-expert gate are
// F32; the rest use the backend's activation dtype.
struct ActivationBuffers {
  Buffer x;         // residual stream [rows, hidden]
  Buffer h;         // normalised input of the current block [rows, hidden]
  Buffer qkv;       // stacked q|k|v projection (backends that want fused weights)
  Buffer q, k, v;   // separate projections otherwise
  Buffer attn;      // attention output [rows, heads * head_dim]
  Buffer o;         // o projection [rows, hidden]
  Buffer gate, up;  // separate gate and up projections [rows, >= ffn width]
  Buffer gate_up;   // stacked gate|up projection [rows, >= 2 * ffn width]
  Buffer act;       // silu(gate) * up [rows, >= ffn width]
  Buffer ffn_out;   // the FFN branch [rows, hidden]
  Buffer router;    // router logits [rows, experts]
  Buffer ids, wts;  // chosen experts (I32) and their weights [rows, top_k]
  Buffer shared;    // shared expert branch [rows, hidden]
  Buffer sgate;     // shared expert gate logit [rows, 1]
};

}  // namespace inferdesk
