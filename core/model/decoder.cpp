#include "core/model/decoder.h"

#include <algorithm>

#include "core/util/error.h"

namespace inferdesk {

AttentionWeights load_attention(WeightLoader& w, const ModelConfig& c, const std::string& p,
                                const AttentionNames& names) {
  const int64_t H = c.hidden_size, D = c.head_dim;
  const int64_t q_out = c.num_attention_heads * D, kv_out = c.num_key_value_heads * D;
  AttentionWeights a;
  a.norm = w.vector(p + ".input_layernorm.weight", H);
  const std::string sa = p + ".self_attn.";
  const std::vector<std::string> qkv = {sa + "q_proj.weight", sa + "k_proj.weight", sa + "v_proj.weight"};
  const bool stack = w.stacks(qkv, {q_out, kv_out, kv_out}, H);
  if (stack) {
    a.qkv = w.stacked_matrix(qkv, {q_out, kv_out, kv_out}, H);
    if (names.bias)
      a.qkv_bias = w.stacked_vector({sa + "q_proj.bias", sa + "k_proj.bias", sa + "v_proj.bias"},
                                    {q_out, kv_out, kv_out});
  } else {
    a.q = w.matrix(sa + "q_proj.weight", q_out, H);
    a.k = w.matrix(sa + "k_proj.weight", kv_out, H);
    a.v = w.matrix(sa + "v_proj.weight", kv_out, H);
  }
  a.o = w.matrix(sa + "o_proj.weight", H, q_out);
  if (names.bias && !stack) {
    a.q_bias = w.vector(p + ".self_attn.q_proj.bias", q_out);
    a.k_bias = w.vector(p + ".self_attn.k_proj.bias", kv_out);
    a.v_bias = w.vector(p + ".self_attn.v_proj.bias", kv_out);
  }
  if (names.qk_norm) {
    a.q_norm = w.vector(p + ".self_attn.q_norm.weight", D);
    a.k_norm = w.vector(p + ".self_attn.k_norm.weight", D);
  }
  return a;
}

DenseFfnWeights load_dense_ffn(WeightLoader& w, const std::string& p, int64_t hidden, int64_t inter, const char* gate,
                               const char* up, const char* down) {
  DenseFfnWeights f;
  f.gate = w.matrix(p + "." + gate + ".weight", inter, hidden);
  f.up = w.matrix(p + "." + up + ".weight", inter, hidden);
  f.down = w.matrix(p + "." + down + ".weight", hidden, inter);
  return f;
}

DenseFfnWeights load_swiglu_mlp(WeightLoader& w, const std::string& p, int64_t hidden, int64_t inter, const char* gate,
                                const char* up, const char* down) {
  const std::vector<std::string> names = {p + "." + gate + ".weight", p + "." + up + ".weight"};
  if (!w.stacks(names, {inter, inter}, hidden)) return load_dense_ffn(w, p, hidden, inter, gate, up, down);
  DenseFfnWeights f;
  f.gate_up = w.stacked_matrix(names, {inter, inter}, hidden);
  f.down = w.matrix(p + "." + down + ".weight", hidden, inter);
  return f;
}

void load_embeddings_and_head(WeightLoader& w, const ModelConfig& c, DecoderWeights& out) {
  out.embed = w.matrix("model.embed_tokens.weight", c.vocab_size, c.hidden_size);
  out.final_norm = w.vector("model.norm.weight", c.hidden_size);
  // Tied embeddings: lm_head reuses the embedding matrix (some tied checkpoints still ship a copy).
  if (!c.tie_word_embeddings || w.has("lm_head.weight"))
    out.lm_head = w.matrix("lm_head.weight", c.vocab_size, c.hidden_size);
  else
    out.lm_head = out.embed;
}

std::unique_ptr<Model> build_decoder(WeightLoader& w, const ModelConfig& c, const AttentionNames& names,
                                     const FfnLoader& ffn) {
  DecoderWeights d;
  load_embeddings_and_head(w, c, d);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i);
    DecoderLayerWeights l;
    l.attn = load_attention(w, c, p, names);
    l.ffn_norm = w.vector(p + ".post_attention_layernorm.weight", c.hidden_size);
    ffn(w, c, i, p, l);
    d.layers.push_back(std::move(l));
  }
  return make_decoder_model(c, std::move(d));
}

void load_dense_mlp(WeightLoader& w, const ModelConfig& c, int64_t, const std::string& prefix,
                    DecoderLayerWeights& out) {
  out.dense = load_swiglu_mlp(w, prefix + ".mlp", c.hidden_size, c.intermediate_size);
}

void load_qwen_moe_mlp(WeightLoader& w, const ModelConfig& c, int64_t layer, const std::string& prefix,
                       DecoderLayerWeights& out) {
  out.is_moe = c.is_moe_layer(layer);
  if (!out.is_moe) return load_dense_mlp(w, c, layer, prefix, out);
  const std::string m = prefix + ".mlp";
  out.moe.router = w.matrix(m + ".gate.weight", c.num_experts, c.hidden_size);
  for (int64_t e = 0; e < c.num_experts; ++e)
    out.moe.experts.push_back(
        load_swiglu_mlp(w, m + ".experts." + std::to_string(e), c.hidden_size, c.moe_intermediate_size));
  if (c.shared_expert_intermediate_size > 0) {
    out.moe.shared = load_swiglu_mlp(w, m + ".shared_expert", c.hidden_size, c.shared_expert_intermediate_size);
    out.moe.shared_gate = w.matrix(m + ".shared_expert_gate.weight", 1, c.hidden_size);
  }
  finish_moe(out.moe);
}

namespace {

// Activation buffers for up to `capacity` token rows, and for up to `logit_capacity` logit rows:
// the gathered rows `last` (F32, like the residual stream), their final norm and the F32 logits.
struct Workspace : ActivationBuffers {
  int64_t capacity = 0;
  int64_t logit_capacity = 0;
  Buffer last, last_norm, logits;
};

class DecoderModel : public Model {
 public:
  DecoderModel(ModelConfig config, DecoderWeights weights)
      : config_(std::move(config)), w_(std::move(weights)), rope_(make_rope_config(config_)) {
    for (auto& l : w_.layers) {
      max_inter_ = std::max(max_inter_, ffn_width(l));
      (l.attn.qkv.empty() ? separate_qkv_ : stacked_qkv_) = true;
      for (const DenseFfnWeights* f : {&l.dense, &l.moe.shared})
        if (!f->down.empty()) (f->gate_up.empty() ? separate_gate_up_ : stacked_gate_up_) = true;
    }
  }

  const ModelConfig& config() const override { return config_; }

  void reserve(Backend& b, int64_t max_tokens, int64_t max_logit_rows) override {
    ensure_workspace(b, max_tokens, max_logit_rows);
  }

  Tensor forward(Backend& b, const StepInput& step) override {
    const int64_t n = step.num_tokens();
    const int64_t R0 = static_cast<int64_t>(step.logit_rows.size());
    if (n == 0) throw Error(ErrorCode::Internal, "forward called with an empty step");
    ensure_workspace(b, n, R0);
    const StepPlan plan = b.begin_step(step);
    const int64_t T = plan.rows, R = plan.logit_rows;
    if (T > ws_.capacity || R > ws_.logit_capacity || T < n || R < R0)
      throw Error(ErrorCode::Internal, "backend step plan exceeds the reserved activations");
    if (!plan.replay) run_layers(b, T, R);
    b.end_step();
    return ws_.logits.tensor().row_slice(0, R0);
  }

 private:
  float eps() const { return static_cast<float>(config_.rms_norm_eps); }

  AttentionShape attention_shape(int32_t layer) const {
    const auto& windows = config_.layer_sliding_window;
    return AttentionShape{.num_heads = static_cast<int32_t>(config_.num_attention_heads),
                          .num_kv_heads = static_cast<int32_t>(config_.num_key_value_heads),
                          .head_dim = static_cast<int32_t>(config_.head_dim),
                          .sliding_window = static_cast<int32_t>(windows.empty() ? 0 : windows[layer]),
                          .eps = eps()};
  }

  MoeRouting routing() const {
    return MoeRouting{.top_k = static_cast<int32_t>(config_.num_experts_per_tok), .normalize = config_.norm_topk_prob};
  }

  void run_layers(Backend& b, int64_t T, int64_t R) {
    Tensor x = ws_.x.tensor().row_slice(0, T);
    Tensor ffn_out = ws_.ffn_out.tensor().row_slice(0, T);
    b.embed(w_.embed.tensor(), x);
    // h_ready: the previous dense layer's down projection closed its residual branch and already
    // normalised h for this layer (linear_add_rms_norm); otherwise ffn_out is still to be added.
    bool h_ready = false;
    for (size_t i = 0; i < w_.layers.size(); ++i) {
      const DecoderLayerWeights& L = w_.layers[i];
      Tensor h = ws_.h.tensor().row_slice(0, T);
      if (i == 0)
        b.rms_norm(x, L.attn.norm.tensor(), eps(), h);
      else if (!h_ready)
        b.add_rms_norm(x, ffn_out, L.attn.norm.tensor(), eps(), h);
      const auto layer = static_cast<int32_t>(i);
      // Ends with x += o, h = ffn_norm(x).
      attention_block(b, layer, L.attn, attention_shape(layer), rope_, L.ffn_norm.tensor(), ws_, T);
      const Tensor* next_norm = i + 1 < w_.layers.size() ? &w_.layers[i + 1].attn.norm.tensor() : nullptr;
      h_ready = false;
      if (L.is_moe)
        moe_ffn(b, layer, L.moe, routing(), h, ffn_out, ws_);
      else
        h_ready = dense_ffn(b, L.dense, h, ffn_out, next_norm, eps(), ws_);
    }
    b.add(x, ffn_out);  // the last layer's branch (never fused: the final norm reads x)
    Tensor last = ws_.last.tensor().row_slice(0, R);
    Tensor last_norm = ws_.last_norm.tensor().row_slice(0, R);
    b.gather_rows(x, last);
    b.rms_norm(last, w_.final_norm.tensor(), eps(), last_norm);
    b.linear(last_norm, w_.lm_head.tensor(), nullptr, ws_.logits.tensor().row_slice(0, R));
  }

  static int64_t ffn_width(const DecoderLayerWeights& l) {
    if (!l.is_moe) return l.dense.inter();
    int64_t w = l.moe.experts.empty() ? 0 : l.moe.experts[0].inter();
    if (!l.moe.shared.down.empty()) w = std::max(w, l.moe.shared.inter());
    return w;
  }

  void ensure_workspace(Backend& b, int64_t T, int64_t R) {
    const DType act = b.activation_dtype();
    bool moved = false;
    if (T > ws_.capacity) {
      const int64_t n = std::max<int64_t>(T, 16);
      const int64_t H = config_.hidden_size, D = config_.head_dim;
      const int64_t qo = config_.num_attention_heads * D, kvo = config_.num_key_value_heads * D;
      auto a = [&](int64_t cols) { return b.alloc(act, n, cols); };
      auto f32 = [&](int64_t cols) { return b.alloc(DType::F32, n, cols); };
      static_cast<ActivationBuffers&>(ws_) = ActivationBuffers{};  // free the old ones first
      ws_.x = f32(H);
      ws_.h = a(H);
      // Stacked and separate forms may both occur (block-scaled FP8 parts that cannot be stacked).
      if (stacked_qkv_) ws_.qkv = a(qo + 2 * kvo);
      if (separate_qkv_) {
        ws_.q = a(qo);
        ws_.k = a(kvo);
        ws_.v = a(kvo);
      }
      if (stacked_gate_up_) ws_.gate_up = a(2 * max_inter_);
      if (separate_gate_up_) {
        ws_.gate = a(max_inter_);
        ws_.up = a(max_inter_);
      }
      ws_.attn = a(qo);
      ws_.o = a(H);
      ws_.act = a(max_inter_);
      ws_.ffn_out = a(H);
      if (config_.is_moe()) {
        ws_.router = f32(config_.num_experts);
        ws_.ids = b.alloc(DType::I32, n, config_.num_experts_per_tok);
        ws_.wts = f32(config_.num_experts_per_tok);
        ws_.shared = a(H);
        ws_.sgate = f32(1);
      }
      ws_.capacity = n;
      moved = true;
    }
    if (R > ws_.logit_capacity) {
      const int64_t n = std::max<int64_t>(R, 8);
      ws_.last = b.alloc(DType::F32, n, config_.hidden_size);
      ws_.last_norm = b.alloc(act, n, config_.hidden_size);
      ws_.logits = b.alloc(DType::F32, n, config_.vocab_size);
      ws_.logit_capacity = n;
      moved = true;
    }
    if (moved) b.invalidate_graphs();
  }

  ModelConfig config_;
  DecoderWeights w_;
  RopeConfig rope_;
  int64_t max_inter_ = 0;
  bool stacked_qkv_ = false, separate_qkv_ = false, stacked_gate_up_ = false, separate_gate_up_ = false;
  Workspace ws_;
};

}  // namespace

std::unique_ptr<Model> make_decoder_model(const ModelConfig& config, DecoderWeights weights) {
  return std::make_unique<DecoderModel>(config, std::move(weights));
}

}  // namespace inferdesk
