#include "core/io/folder_weights.h"

#include <deque>
#include <optional>

#include "core/io/fp8_weights.h"
#include "core/io/int_weights.h"
#include "core/model/model_validation.h"
#include "core/util/error.h"

namespace inferdesk {

namespace {

class FolderWeights : public WeightSource {
 public:
  FolderWeights(const ModelFolder& folder, const FolderWeightsOptions& options)
      : folder_(folder), quant_(folder.config().quantization), options_(options) {
    if ((options_.quantize_fp8 || options_.quantize_int != IntOnLoad::None) && quant_.quantized())
      throw Error(ErrorCode::InvalidArgument, "the folder is already quantized (" + quant_.describe() +
                                                  "); load it as it is instead of quantizing it again");
    if (options_.quantize_fp8 && options_.quantize_int != IntOnLoad::None)
      throw Error(ErrorCode::InvalidArgument, "quantize on load to FP8 or to integers, not both");
  }
  bool has(const std::string& name) const override { return folder_.find(name) != nullptr || int_module(name); }
  Buffer load(Backend& backend, const std::string& name, const std::vector<int64_t>& shape) override {
    auto [rows, cols] = weight_rows_cols(shape);
    if (shape.size() == 2 && (int_module(name) || int_on_load(name))) return load_int(backend, name, rows, cols);
    if (auto q = scheme_of(name, shape)) {
      Part p = fp8_part(name, rows, cols, *q);
      return attach_scales(backend, backend.load_weight(p.codes, rows, cols), p.scheme, p.scales, name);
    }
    return backend.load_weight(plain(name, shape), rows, cols);
  }
  // load()'s decisions without its reads; an integer weight's packed layout is checked as it
  // converts (read_int_weight), its presence and scheme here.
  void check(const std::string& name, const std::vector<int64_t>& shape) const override {
    if (shape.size() == 2 && int_module(name)) {
      int_scheme(weight_module(name));
      return;
    }
    if (shape.size() == 2 && int_on_load(name)) {
      check_dtype(folder_.get(name, shape), name);
      return;
    }
    if (scheme_of(name, shape)) {
      (void)folder_.get(name, shape);
      if (!options_.quantize_fp8) scale_tensor(name);
      return;
    }
    check_dtype(folder_.get(name, shape), name);
  }
  int64_t nbytes(const std::string& name, const std::vector<int64_t>&) const override {
    const HostTensor* t = folder_.find(name);
    if (!t && int_module(name)) t = folder_.find(packed_name(weight_module(name)));
    return t ? static_cast<int64_t>(t->nbytes) : 0;
  }
  int64_t total_bytes() const override { return folder_.weight_bytes(); }
  bool can_stack(const std::vector<std::string>& names, const std::vector<int64_t>& rows, int64_t cols) const override {
    // Integer weights load one matrix each: their scales and groups do not stack.
    for (const std::string& n : names)
      if (cols > 0 && (int_module(n) || int_on_load(n))) return false;
    const auto q = cols > 0 ? scheme_of(names[0], {rows[0], cols}) : std::nullopt;
    if (!q || q->granularity != ScaleGranularity::Block || q->block_n <= 0) return true;
    for (int64_t r : rows)
      if (r % q->block_n != 0) return false;
    return true;
  }
  Buffer load_stacked(Backend& backend, const std::vector<std::string>& names, const std::vector<int64_t>& rows,
                      int64_t cols) override {
    if (cols > 0 && scheme_of(names[0], {rows[0], cols})) return load_stacked_fp8(backend, names, rows, cols);
    std::vector<HostTensor> parts;
    for (size_t i = 0; i < names.size(); ++i) {
      std::vector<int64_t> shape = cols > 0 ? std::vector<int64_t>{rows[i], cols} : std::vector<int64_t>{rows[i]};
      parts.push_back(plain(names[i], shape));
    }
    int64_t total = 0;
    for (int64_t r : rows) total += r;
    return cols > 0 ? backend.load_weight_rows(parts, cols) : backend.load_weight_rows(parts, total);
  }

 private:
  struct Part {
    HostTensor codes;  // F8E4M3 [rows, cols]
    HostScales scales;
    QuantInfo scheme;
  };

  // A tensor the backend takes as stored, checked: shape, dtype, and no NaN or infinity (which
  // would otherwise surface as NaN logits at the first step, naming no tensor).
  const HostTensor& plain(const std::string& name, const std::vector<int64_t>& shape) const {
    const HostTensor& t = folder_.get(name, shape);
    check_dtype(t, name);
    check_finite(t, name);
    return t;
  }

  TensorLookup lookup() const {
    return [this](const std::string& n) { return folder_.find(n); };
  }
  // Whether `name` ("<module>.weight") is an integer weight of the folder's quantization_config.
  bool int_module(const std::string& name) const {
    const std::string module = weight_module(name);
    return !module.empty() && quant_.int_packing != IntPacking::None &&
           has_int_weight(quant_.int_packing, module, lookup());
  }
  bool int_on_load(const std::string& name) const {
    const std::string module = weight_module(name);
    return options_.quantize_int != IntOnLoad::None && !module.empty() && is_projection_module(module);
  }
  std::string packed_name(const std::string& module) const {
    return module + (quant_.int_packing == IntPacking::CtPacked ? ".weight_packed"
                     : quant_.int_packing == IntPacking::CtInt8 ? ".weight"
                                                                : ".qweight");
  }

  // An integer weight: read and converted (or quantized) into the canonical layout, whose codes
  // this source keeps (the CPU backend reads them in place).
  Buffer load_int(Backend& backend, const std::string& name, int64_t rows, int64_t cols) {
    HostIntWeight h;
    if (options_.quantize_int != IntOnLoad::None) {
      const HostTensor& src = plain(name, {rows, cols});
      h = options_.quantize_int == IntOnLoad::Int8Channel ? quantize_int8_per_channel(src, rows, cols)
                                                          : quantize_int4_group(src, rows, cols, 128);
    } else {
      const std::string module = weight_module(name);
      h = read_int_weight(quant_.int_packing, int_scheme(module), module, rows, cols, lookup());
    }
    owned_.push_back(std::move(h.codes));
    const HostTensor codes{name,
                           h.code_dtype(),
                           {rows, h.code_cols()},
                           reinterpret_cast<const std::byte*>(owned_.back().data()),
                           owned_.back().size()};
    return upload_int_weight(backend, codes, h, name);
  }

  QuantInfo int_scheme(const std::string& module) const {
    auto q = quant_.scheme_for(module);
    if (!q || q->scheme != QuantScheme::Int)
      throw Error(ErrorCode::Format, "tensor '" + packed_name(module) + "' holds integer weights but the " +
                                         "quantization_config (" + quant_.describe() + ") does not quantize module '" +
                                         module + "'");
    return *q;
  }

  const HostTensor& scale_tensor(const std::string& name) const {
    const std::string scale_name = quant_.weight_scale_name(weight_module(name));
    const HostTensor* s = folder_.find(scale_name);
    if (!s) throw Error(ErrorCode::Format, "FP8 weight '" + name + "' has no scale tensor '" + scale_name + "'");
    return *s;
  }

  // The FP8 scheme `name` loads with, or nullopt for a plain tensor.
  std::optional<QuantInfo> scheme_of(const std::string& name, const std::vector<int64_t>& shape) const {
    const std::string module = shape.size() == 2 ? weight_module(name) : "";
    if (module.empty()) return std::nullopt;
    if (options_.quantize_fp8) {
      if (!is_projection_module(module)) return std::nullopt;
      QuantInfo q;
      q.scheme = QuantScheme::Fp8;
      q.granularity = ScaleGranularity::Channel;
      q.act = ActQuant::DynamicToken;
      return q;
    }
    const HostTensor* t = folder_.find(name);
    if (!quant_.quantized() || !t || t->dtype != DType::F8E4M3) return std::nullopt;
    auto q = quant_.scheme_for(module);
    if (!q)
      throw Error(ErrorCode::Format, "tensor '" + name + "' is F8_E4M3 but the quantization_config (" +
                                         quant_.describe() + ") does not quantize module '" + module + "'");
    return q;
  }

  Part fp8_part(const std::string& name, int64_t rows, int64_t cols, const QuantInfo& q) {
    Part p;
    p.scheme = q;
    if (options_.quantize_fp8) {
      const HostTensor& src = plain(name, {rows, cols});
      QuantizedHost qh = quantize_fp8_per_channel(src, rows, cols);
      owned_.push_back(std::move(qh.codes));
      p.codes = HostTensor{name,
                           DType::F8E4M3,
                           {rows, cols},
                           reinterpret_cast<const std::byte*>(owned_.back().data()),
                           owned_.back().size()};
      p.scales = std::move(qh.scales);
      return p;
    }
    p.codes = folder_.get(name, {rows, cols});
    check_finite(p.codes, name);
    const std::string module = weight_module(name);
    p.scales = read_weight_scales(scale_tensor(name), q, rows, cols);
    if (q.act == ActQuant::Static) {
      const std::string in_name = quant_.input_scale_name(module);
      const HostTensor* in = folder_.find(in_name);
      if (!in)
        throw Error(ErrorCode::Format, "FP8 weight '" + name + "' has static activations but no '" + in_name + "'");
      p.scheme.input_scale = read_input_scale(*in);
    }
    return p;
  }

  Buffer load_stacked_fp8(Backend& backend, const std::vector<std::string>& names, const std::vector<int64_t>& rows,
                          int64_t cols) {
    std::vector<Part> parts;
    std::vector<HostTensor> codes;
    std::vector<HostScales> scales;
    for (size_t i = 0; i < names.size(); ++i) {
      auto q = scheme_of(names[i], {rows[i], cols});
      if (!q)
        throw Error(ErrorCode::Format,
                    "tensor '" + names[i] + "' is not FP8 but '" + names[0] + "', which it is stacked with, is");
      parts.push_back(fp8_part(names[i], rows[i], cols, *q));
      const QuantInfo& a = parts[0].scheme;
      const QuantInfo& b = parts.back().scheme;
      if (a.granularity != b.granularity || a.act != b.act || a.block_n != b.block_n || a.block_k != b.block_k)
        throw Error(ErrorCode::Unsupported, "'" + names[i] + "' is quantized unlike '" + names[0] + "' (" +
                                                describe(b) + " vs " + describe(a) +
                                                "); InferDesk computes them in one product");
      codes.push_back(parts.back().codes);
      scales.push_back(parts.back().scales);
    }
    QuantInfo stacked;
    HostScales s = stack_scales(scales, rows, parts[0].scheme, stacked, names[0]);
    // One input serves every part: the largest static scale covers them all (as vLLM does).
    for (const Part& p : parts) stacked.input_scale = std::max(stacked.input_scale, p.scheme.input_scale);
    return attach_scales(backend, backend.load_weight_rows(codes, cols), stacked, s, names[0]);
  }

  void check_dtype(const HostTensor& t, const std::string& name) const {
    check_plain_weight_dtype(t, name, quant_.quantized());
  }
  const ModelFolder& folder_;
  const QuantConfig& quant_;
  FolderWeightsOptions options_;
  std::deque<std::vector<uint8_t>> owned_;  // codes quantized on load (the CPU backend reads them in place)
};

}  // namespace

KvScales read_kv_scales(const ModelFolder& folder, int64_t num_layers) {
  KvScales s;
  const std::string first = "model.layers.0.self_attn.k_scale";
  if (!folder.find(first)) return s;
  for (int64_t i = 0; i < num_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".self_attn.";
    for (const char* kv : {"k_scale", "v_scale"}) {
      const HostTensor* t = folder.find(p + kv);
      if (!t) throw Error(ErrorCode::Format, "the checkpoint has KV scales but no '" + p + kv + "'");
      (kv[0] == 'k' ? s.k : s.v).push_back(read_input_scale(*t));
    }
  }
  return s;
}

std::unique_ptr<WeightSource> make_folder_weights(const ModelFolder& folder, const FolderWeightsOptions& options) {
  return std::make_unique<FolderWeights>(folder, options);
}

}  // namespace inferdesk
