#include "core/layers/ffn.h"

namespace inferdesk {

void finish_moe(MoeWeights& moe) {
  moe.views.clear();
  for (auto& e : moe.experts) {
    if (e.gate_up.empty()) {
      moe.views.push_back({e.gate.tensor(), e.up.tensor(), e.down.tensor()});
    } else {  // stacked: gate and up are the two row halves of one weight
      const int64_t inter = e.inter();
      moe.views.push_back(
          {e.gate_up.tensor().row_slice(0, inter), e.gate_up.tensor().row_slice(inter, inter), e.down.tensor()});
    }
  }
}

bool dense_ffn(Backend& b, const DenseFfnWeights& f, const Tensor& h, Tensor out, const Tensor* next_norm, float eps,
               const ActivationBuffers& acts) {
  const int64_t T = h.rows, I = f.inter();
  Tensor act = acts.act.tensor().row_slice(0, T).col_slice(0, I);
  if (!f.gate_up.empty()) {
    Tensor gate_up = acts.gate_up.tensor().row_slice(0, T).col_slice(0, 2 * I);
    b.linear_swiglu(h, f.gate_up.tensor(), gate_up, act);
  } else {
    Tensor gate = acts.gate.tensor().row_slice(0, T).col_slice(0, I);
    Tensor up = acts.up.tensor().row_slice(0, T).col_slice(0, I);
    b.linear(h, f.gate.tensor(), nullptr, gate);
    b.linear(h, f.up.tensor(), nullptr, up);
    b.silu_mul(gate, up, act);
  }
  if (next_norm) {
    b.linear_add_rms_norm(act, f.down.tensor(), out, acts.x.tensor().row_slice(0, T), *next_norm, eps,
                          acts.h.tensor().row_slice(0, T));
    return true;
  }
  b.linear(act, f.down.tensor(), nullptr, out);
  return false;
}

void moe_ffn(Backend& b, int32_t layer, const MoeWeights& m, const MoeRouting& routing, const Tensor& h, Tensor out,
             const ActivationBuffers& acts) {
  const int64_t T = h.rows;
  Tensor router = acts.router.tensor().row_slice(0, T);
  Tensor ids = acts.ids.tensor().row_slice(0, T), wts = acts.wts.tensor().row_slice(0, T);
  b.linear(h, m.router.tensor(), nullptr, router);
  b.moe_route(router, routing.top_k, routing.normalize, ids, wts);
  b.moe_experts(layer, h, m.views, ids, wts, out);
  if (!m.shared.down.empty()) {
    Tensor shared = acts.shared.tensor().row_slice(0, T);
    dense_ffn(b, m.shared, h, shared, nullptr, 0.0f, acts);  // no next norm: eps unused
    Tensor g = acts.sgate.tensor().row_slice(0, T);
    b.linear(h, m.shared_gate.tensor(), nullptr, g);
    b.sigmoid_gate_add(out, shared, g);
  }
}

}  // namespace inferdesk
