#include "core/quant/awq_quantizer.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/engine/model_loader.h"
#include "core/engine/quant_eval.h"
#include "core/quant/capture_backend.h"
#include "core/util/error.h"

namespace inferdesk {
namespace {

const char* const kProjections[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                                    "mlp.gate_proj",    "mlp.up_proj",      "mlp.down_proj"};

std::string layer_prefix(int64_t i) { return "model.layers." + std::to_string(i) + "."; }

Matrix to_matrix(const HostTensor& t) {
  Matrix m;
  m.rows = t.shape.size() == 2 ? t.shape[0] : 1;
  m.cols = t.shape.back();
  m.v.resize(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) m.v[static_cast<size_t>(i)] = float_at(t, i);
  return m;
}

float round_to(DType d, float v) {
  if (d == DType::BF16) return bf16_to_f32(f32_to_bf16(v));
  if (d == DType::F16) return f16_to_f32(f32_to_f16(v));
  return v;
}

// The float state of one layer while it is calibrated: its projections and the vectors scaling
// touches, by tensor name.
struct LayerState {
  std::map<std::string, Matrix> w;     // "<module>.weight" and the vectors
  std::map<std::string, DType> dtype;  // of the vectors, for rounding
};

void scale_columns(Matrix& w, const std::vector<float>& s) {
  for (int64_t r = 0; r < w.rows; ++r)
    for (int64_t k = 0; k < w.cols; ++k) w.at(r, k) *= s[static_cast<size_t>(k)];
}

// Divides `vec` (a norm weight or bias, rounded to its dtype) by s and returns the factor each
// entry really changed by, which the consumers' columns (or the next op's columns) are scaled by.
std::vector<float> divide_vector(Matrix& vec, DType dtype, const std::vector<float>& s) {
  std::vector<float> eff(s.size(), 1.0f);
  for (size_t k = 0; k < s.size(); ++k) {
    const float old = vec.v[k], now = round_to(dtype, old / s[k]);
    if (old != 0.0f && now != 0.0f && std::isfinite(now)) {
      vec.v[k] = now;
      eff[k] = old / now;
    }
  }
  return eff;
}

struct Group {
  const char* name;
  std::vector<std::string> linears;  // modules reading the same input (the first one is watched)
  std::string prev_vector;           // a norm weight divided by s, or empty
  std::string prev_rows;             // a module whose output rows are divided by s, or empty
};

std::vector<Group> layer_groups(const LayerState& st, const std::string& p) {
  std::vector<Group> g;
  g.push_back({"qkv", {p + "self_attn.q_proj", p + "self_attn.k_proj", p + "self_attn.v_proj"},
               p + "input_layernorm.weight", ""});
  if (st.w.at(p + "self_attn.v_proj.weight").rows == st.w.at(p + "self_attn.o_proj.weight").cols)
    g.push_back({"o", {p + "self_attn.o_proj"}, "", p + "self_attn.v_proj"});
  g.push_back({"gate_up", {p + "mlp.gate_proj", p + "mlp.up_proj"}, p + "post_attention_layernorm.weight", ""});
  g.push_back({"down", {p + "mlp.down_proj"}, "", p + "mlp.up_proj"});
  return g;
}

// Folds scales s into the group: the previous op divided, the group's columns multiplied.
void apply_scales(LayerState& st, const Group& g, std::vector<float> s) {
  if (!g.prev_vector.empty()) {
    s = divide_vector(st.w.at(g.prev_vector), st.dtype.at(g.prev_vector), s);
  } else {
    Matrix& prev = st.w.at(g.prev_rows + ".weight");
    for (int64_t r = 0; r < prev.rows; ++r)
      for (int64_t k = 0; k < prev.cols; ++k) prev.at(r, k) /= s[static_cast<size_t>(r)];
    const auto bias = st.w.find(g.prev_rows + ".bias");
    if (bias != st.w.end())
      for (size_t r = 0; r < s.size(); ++r)
        bias->second.v[r] = round_to(st.dtype.at(g.prev_rows + ".bias"), bias->second.v[r] / s[r]);
  }
  for (const std::string& m : g.linears) scale_columns(st.w.at(m + ".weight"), s);
}

LayerState read_layer(const ModelFolder& f, int64_t i) {
  const std::string p = layer_prefix(i);
  LayerState st;
  for (const char* m : kProjections) st.w[p + m + ".weight"] = to_matrix(*f.find(p + m + ".weight"));
  for (const std::string& v : {p + "input_layernorm.weight", p + "post_attention_layernorm.weight",
                              p + "self_attn.v_proj.bias"}) {
    const HostTensor* t = f.find(v);
    if (!t) continue;
    st.w[v] = to_matrix(*t);
    st.dtype[v] = t->dtype;
  }
  return st;
}

// What the calibration passes load instead of the folder's tensors: F32 views of `store`.
std::map<std::string, HostTensor> replacements(const std::map<std::string, std::vector<float>>& store,
                                               const ModelFolder& f) {
  std::map<std::string, HostTensor> out;
  for (const auto& [name, v] : store) {
    HostTensor t = *f.find(name);
    t.dtype = DType::F32;
    t.data = reinterpret_cast<const std::byte*>(v.data());
    t.nbytes = v.size() * sizeof(float);
    out[name] = t;
  }
  return out;
}

struct Calibrator {
  const std::filesystem::path& dir;
  const ModelFolder& folder;
  const std::vector<int32_t>& ids;
  const AwqOptions& o;
  int64_t layers;
  AwqResult result;
  std::map<std::string, std::vector<float>> store;  // what earlier layers became (dequantized, scaled)

  bool tick(int64_t layer, int32_t step, int32_t steps) const {
    const double f = (static_cast<double>(layer) + 0.8 * step / steps) / static_cast<double>(layers);
    return !o.progress || o.progress(std::min(f, 1.0));
  }

  // One teacher-forced pass with the earlier layers quantized, recording layer i's inputs.
  std::unique_ptr<LoadedModel> capture(int64_t i, CaptureBackend*& cap) {
    const std::string p = layer_prefix(i);
    const std::map<std::string, HostTensor> repl = replacements(store, folder);
    auto backend = std::make_unique<CaptureBackend>(
        o.make_backend ? o.make_backend() : make_cpu_backend(0), &repl,
        std::set<std::string>{p + "self_attn.q_proj.weight", p + "self_attn.o_proj.weight",
                              p + "mlp.gate_proj.weight", p + "mlp.down_proj.weight"});
    cap = backend.get();
    auto m = std::make_unique<LoadedModel>(load_model_folder(dir, std::move(backend)));
    const int32_t steps = (static_cast<int32_t>(ids.size()) - 1 + o.chunk - 1) / o.chunk;
    int32_t step = 0;
    teacher_forced_log_probs(
        *m, ids, o.chunk, KvCacheDtype::Auto, [](int32_t, const std::vector<float>&) {},
        [&] { return tick(i, ++step, steps); });
    return m;  // the replacement views are no longer read: the model is not run again
  }

  void layer(int64_t i) {
    CaptureBackend* cap = nullptr;
    const std::unique_ptr<LoadedModel> m = capture(i, cap);
    LayerState st = read_layer(folder, i);
    for (const Group& g : layer_groups(st, layer_prefix(i))) {
      if (!o.search_scales) break;
      std::vector<const Matrix*> ws;
      for (const std::string& l : g.linears) ws.push_back(&st.w.at(l + ".weight"));
      const ScaleSearchResult r = search_awq_scales(cap->inputs(g.linears[0] + ".weight"), ws, o.search);
      result.searches.push_back({static_cast<int32_t>(i), g.name, r.ratio, r.loss, r.loss_unscaled});
      apply_scales(st, g, r.scales);
    }
    for (auto& [name, mat] : st.w) {
      if (st.dtype.count(name)) {  // a vector: changed values are kept as they are
        if (o.search_scales) result.replaced[name] = mat.v, store[name] = mat.v;
        continue;
      }
      const std::string module = name.substr(0, name.size() - 7);  // without ".weight"
      HostIntWeight q = awq_quantize(mat, o.search.group);
      std::vector<float>& deq = store[name];
      deq.resize(mat.v.size());
      for (int64_t r = 0; r < mat.rows; ++r)
        for (int64_t k = 0; k < mat.cols; ++k) deq[static_cast<size_t>(r * mat.cols + k)] = q.dequantized(r, k);
      result.linears.emplace(module, std::move(q));
    }
    if (!tick(i + 1, 0, 1)) throw Error(ErrorCode::Cancelled, "AWQ calibration was cancelled");
  }
};

}  // namespace

std::vector<std::string> awq_modules(const ModelFolder& folder, int64_t layer) {
  std::vector<std::string> out;
  for (const char* m : kProjections) out.push_back(layer_prefix(layer) + m);
  return out;
}

void check_awq_quantizable(const ModelFolder& f) {
  const ModelConfig& c = f.config();
  if (c.quantization.quantized())
    throw Error(ErrorCode::InvalidArgument, "the folder is already quantized (" + c.quantization.describe() + ")");
  if (c.is_moe()) throw Error(ErrorCode::Unsupported, "AWQ calibration runs on dense models; this one is MoE");
  for (int64_t i = 0; i < c.num_hidden_layers; ++i)
    for (const std::string& m : awq_modules(f, i)) {
      const HostTensor* t = f.find(m + ".weight");
      if (!t || t->shape.size() != 2) throw Error(ErrorCode::Format, "AWQ: missing 2-D tensor '" + m + ".weight'");
      if (t->dtype != DType::F32 && t->dtype != DType::F16 && t->dtype != DType::BF16)
        throw Error(ErrorCode::InvalidArgument, "AWQ: tensor '" + t->name + "' is " + dtype_name(t->dtype) +
                                                    "; only F32, F16 and BF16 weights are quantized");
      if (t->shape[1] % kAwqGroup != 0)
        throw Error(ErrorCode::InvalidArgument, "AWQ: tensor '" + t->name + "' has " + std::to_string(t->shape[1]) +
                                                    " input features, not a multiple of the group size 128");
      if (t->shape[0] % 8 != 0)
        throw Error(ErrorCode::InvalidArgument, "AWQ: tensor '" + t->name + "' has " + std::to_string(t->shape[0]) +
                                                    " output features, not a multiple of 8 (AWQ packs 8 per int32)");
    }
}

AwqResult awq_quantize_model(const std::filesystem::path& dir, const std::vector<int32_t>& calibration_ids,
                             const AwqOptions& options) {
  const ModelFolder folder = ModelFolder::open(dir);
  check_awq_quantizable(folder);
  if (options.chunk <= 0) throw Error(ErrorCode::InvalidArgument, "AWQ: chunk must be positive");
  std::vector<int32_t> ids(calibration_ids.begin(),
                           calibration_ids.begin() +
                               std::min<size_t>(calibration_ids.size(), std::max(options.max_tokens, 2)));
  if (ids.size() < 2) throw Error(ErrorCode::InvalidArgument, "the calibration text has fewer than two tokens");
  for (int32_t id : ids)
    if (id < 0 || id >= folder.config().vocab_size)
      throw Error(ErrorCode::InvalidArgument, "calibration token id " + std::to_string(id) + " is outside the vocabulary");
  Calibrator c{dir, folder, ids, options, folder.config().num_hidden_layers, {}, {}};
  for (int64_t i = 0; i < c.layers; ++i) c.layer(i);
  return std::move(c.result);
}

}  // namespace inferdesk
