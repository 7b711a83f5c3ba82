#include "core/model/weights.h"

#include <cmath>
#include <cstring>
#include <deque>

#include "core/model/quant_config.h"
#include "core/util/error.h"
#include "core/util/fp8.h"
#include "core/util/splitmix.h"

namespace inferdesk {

namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

bool is_projection_weight(const std::string& name, int64_t cols) {
  const std::string module = weight_module(name);
  return cols > 0 && !module.empty() && is_projection_module(module);
}

class DummyWeights : public WeightSource {
 public:
  DummyWeights(uint64_t seed, int64_t total, bool tied_embeddings, bool fp8)
      : seed_(seed), total_(total), tied_(tied_embeddings), fp8_(fp8) {}
  // Every tensor but a tied shape's lm_head: such a model reuses its embedding, as the published
  // checkpoint does (a separate head would take memory the real model does not, and load more
  // bytes than total_bytes counts).
  bool has(const std::string& name) const override { return !(tied_ && name == "lm_head.weight"); }
  Buffer load(Backend& backend, const std::string& name, const std::vector<int64_t>& shape) override {
    auto [rows, cols] = weight_rows_cols(shape);
    if (fp8_ && shape.size() == 2 && is_projection_weight(name, cols)) {
      Buffer b = backend.alloc(DType::F8E4M3, rows, cols);
      fill(backend, b.tensor(), name);
      return with_fp8_scales(backend, std::move(b), name);
    }
    Buffer b = backend.alloc(DType::BF16, rows, cols);
    fill(backend, b.tensor(), name);
    return b;
  }
  Buffer load_stacked(Backend& backend, const std::vector<std::string>& names, const std::vector<int64_t>& rows,
                      int64_t cols) override {
    int64_t total = 0;
    for (int64_t r : rows) total += r;
    if (cols == 0) {  // vectors: one row
      Buffer b = backend.alloc(DType::BF16, 1, total);
      int64_t at = 0;
      for (size_t i = 0; i < names.size(); ++i) {
        fill(backend, b.tensor().col_slice(at, rows[i]), names[i]);
        at += rows[i];
      }
      return b;
    }
    const bool fp8 = fp8_ && is_projection_weight(names[0], cols);
    Buffer b = backend.alloc(fp8 ? DType::F8E4M3 : DType::BF16, total, cols);
    int64_t at = 0;
    for (size_t i = 0; i < names.size(); ++i) {
      fill(backend, b.tensor().row_slice(at, rows[i]), names[i]);
      at += rows[i];
    }
    return fp8 ? with_fp8_scales(backend, std::move(b), names[0]) : b;
  }
  int64_t nbytes(const std::string& name, const std::vector<int64_t>& shape) const override {
    int64_t n = fp8_ && shape.size() == 2 && is_projection_weight(name, shape[1]) ? 1 : 2;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int64_t total_bytes() const override { return total_; }

 private:
  static float matrix_scale(int64_t cols) { return std::sqrt(3.0f / static_cast<float>(cols)); }
  // The same values whether the tensor is loaded alone or stacked with others.
  void fill(Backend& backend, Tensor t, const std::string& name) const {
    const uint64_t seed = seed_ ^ std::hash<std::string>{}(name);
    // Matrices: uniform with variance ~1/fan_in keeps activations finite through many layers.
    // FP8 codes span the format's range; their per-channel scales bring them to the same size.
    const float scale = t.dtype == DType::F8E4M3 ? kFp8E4M3Max : t.rows == 1 ? 1.0f : matrix_scale(t.cols);
    backend.fill_random(t, seed, scale);
  }
  static Buffer with_fp8_scales(Backend& backend, Buffer b, const std::string& name) {
    QuantInfo q;
    q.scheme = QuantScheme::Fp8;
    q.granularity = ScaleGranularity::Channel;
    q.act = ActQuant::DynamicToken;
    const Tensor& t = b.tensor();
    HostScales s{std::vector<float>(static_cast<size_t>(t.rows), matrix_scale(t.cols) / kFp8E4M3Max), t.rows, 1};
    return attach_scales(backend, std::move(b), q, s, name);
  }
  uint64_t seed_;
  int64_t total_;
  bool tied_;
  bool fp8_;
};

// Random integer projections in the canonical layout. The codes live here (the CPU backend reads
// weights in place, as from an mmapped file), so the source must outlive the model, as a folder's.
class DummyIntWeights : public WeightSource {
 public:
  DummyIntWeights(uint64_t seed, int64_t total, bool tied, const QuantInfo& q, bool lm_head)
      : base_(seed, total, tied, false), seed_(seed), total_(total), tied_(tied), q_(q), lm_head_(lm_head) {}
  bool has(const std::string& name) const override { return quantized(name, 1) || base_.has(name); }
  Buffer load(Backend& backend, const std::string& name, const std::vector<int64_t>& shape) override {
    auto [rows, cols] = weight_rows_cols(shape);
    if (shape.size() != 2 || !quantized(name, cols)) return base_.load(backend, name, shape);
    return make(backend, {name}, {rows}, cols);
  }
  Buffer load_stacked(Backend& backend, const std::vector<std::string>& names, const std::vector<int64_t>& rows,
                      int64_t cols) override {
    if (cols == 0 || !quantized(names[0], cols)) return base_.load_stacked(backend, names, rows, cols);
    return make(backend, names, rows, cols);
  }
  int64_t nbytes(const std::string& name, const std::vector<int64_t>& shape) const override {
    if (shape.size() != 2 || !quantized(name, shape[1])) return base_.nbytes(name, shape);
    const int64_t K = shape[1], G = groups(K);
    return shape[0] * (code_bytes(K) + G * 4 * (q_.has_zero_point ? 2 : 1));
  }
  int64_t total_bytes() const override { return total_; }

 private:
  bool quantized(const std::string& name, int64_t cols) const {
    if (name == "lm_head.weight") return lm_head_;
    return is_projection_weight(name, cols);
  }
  int64_t groups(int64_t K) const {
    return q_.granularity == ScaleGranularity::Group ? (K + q_.group_size - 1) / q_.group_size : 1;
  }
  int64_t code_bytes(int64_t K) const { return q_.bits == 4 ? (K + 1) / 2 : K; }
  // Codes: random bytes (every nibble or byte uniform over its range); scales bring (q - z) to
  // the BF16 dummies' size, uniform with variance ~1/fan_in; zero points are small integers.
  Buffer make(Backend& backend, const std::vector<std::string>& names, const std::vector<int64_t>& rows, int64_t K) {
    int64_t N = 0;
    for (int64_t r : rows) N += r;
    const int64_t bytes = code_bytes(K), G = groups(K);
    QuantInfo q = q_;
    q.in_features = K;
    if (!backend.supports_quant(q))
      throw Error(ErrorCode::Unsupported,
                  names[0] + ": the " + backend.name() + " backend does not run " + describe(q));
    std::vector<uint8_t>& codes = codes_.emplace_back(static_cast<size_t>(N * bytes));
    HostScales s{std::vector<float>(static_cast<size_t>(N * G)), N, G};
    std::vector<float> z(q.has_zero_point ? s.values.size() : 0);
    const float step = std::sqrt(3.0f / static_cast<float>(K)) / static_cast<float>(1 << (q.bits - 1));
    int64_t at = 0;
    for (size_t i = 0; i < names.size(); ++i) {
      const uint64_t seed = seed_ ^ std::hash<std::string>{}(names[i]);
      for (int64_t b = 0; b < rows[i] * bytes; b += 8) {
        const uint64_t v = splitmix64(seed + static_cast<uint64_t>(b));
        std::memcpy(&codes[at * bytes + b], &v, static_cast<size_t>(std::min<int64_t>(8, rows[i] * bytes - b)));
      }
      for (int64_t j = 0; j < rows[i] * G; ++j) {
        const uint64_t v = splitmix64(~seed + static_cast<uint64_t>(j));
        s.values[at * G + j] = step * (0.75f + 0.5f * static_cast<float>(v >> 40) / 16777216.0f);
        if (!z.empty()) z[at * G + j] = static_cast<float>(static_cast<int>(v & 3) - 2);
      }
      at += rows[i];
    }
    if (q.bits == 4 && K % 2 == 1)  // the unused high nibble of an odd row's last byte
      for (int64_t n = 0; n < N; ++n) codes[n * bytes + bytes - 1] &= 0x0f;
    HostTensor host{names[0],
                    q.bits == 4 ? DType::U8 : DType::I8,
                    {N, bytes},
                    reinterpret_cast<const std::byte*>(codes.data()),
                    codes.size()};
    Buffer w = backend.load_weight(host, N, bytes);
    const Buffer scales = backend.load_scales(s.values.data(), N, G);
    const Buffer zeros = z.empty() ? Buffer{} : backend.load_scales(z.data(), N, G);
    q.scale_rows = N;
    q.scale_cols = G;
    w.set_quant(q, scales, zeros);
    return w;
  }
  DummyWeights base_;
  uint64_t seed_;
  int64_t total_;
  bool tied_;
  QuantInfo q_;
  bool lm_head_;
  std::deque<std::vector<uint8_t>> codes_;  // stable addresses: loaded weights point into them
};

}  // namespace

std::unique_ptr<WeightSource> make_dummy_int_weights(uint64_t seed, int64_t total_bytes_hint, bool tied_embeddings,
                                                     const QuantInfo& scheme, bool quantize_lm_head) {
  return std::make_unique<DummyIntWeights>(seed, total_bytes_hint, tied_embeddings, scheme, quantize_lm_head);
}

std::pair<int64_t, int64_t> weight_rows_cols(const std::vector<int64_t>& shape) {
  if (shape.size() == 1) return {1, shape[0]};
  if (shape.size() == 2) return {shape[0], shape[1]};
  throw Error(ErrorCode::Internal, "weights are 1-D or 2-D");
}

std::unique_ptr<WeightSource> make_dummy_weights(uint64_t seed, int64_t total_bytes_hint, bool tied_embeddings,
                                                 bool fp8) {
  return std::make_unique<DummyWeights>(seed, total_bytes_hint, tied_embeddings, fp8);
}

Buffer attach_scales(Backend& backend, Buffer w, const QuantInfo& q, const HostScales& s, const std::string& what) {
  if (!backend.supports_quant(q))
    throw Error(ErrorCode::Unsupported, what + ": the " + backend.name() + " backend does not run " + describe(q));
  Buffer scales = backend.load_scales(s.values.data(), s.rows, s.cols);
  QuantInfo info = q;
  info.scale_rows = s.rows;
  info.scale_cols = s.cols;
  w.set_quant(info, scales);
  return w;
}

WeightLoader::WeightLoader(WeightSource& source, Backend& backend, LoadProgress progress)
    : source_(source), backend_(&backend), progress_(std::move(progress)) {}

WeightLoader::WeightLoader(WeightSource& source) : source_(source) {}

Buffer WeightLoader::matrix(const std::string& name, int64_t rows, int64_t cols) { return load(name, {rows, cols}); }

Buffer WeightLoader::vector(const std::string& name, int64_t n) { return load(name, {n}); }

Buffer WeightLoader::load(const std::string& name, const std::vector<int64_t>& shape) {
  if (!source_.has(name))
    throw Error(ErrorCode::NotFound,
                "the checkpoint has no tensor '" + name + "' (expected shape " + shape_str(shape) + ")");
  if (!backend_) {
    source_.check(name, shape);
    return {};
  }
  Buffer b = source_.load(*backend_, name, shape);
  advance(source_.nbytes(name, shape));
  return b;
}

void WeightLoader::advance(int64_t bytes) {
  done_ += bytes;
  if (progress_ && !progress_(done_, source_.total_bytes()))
    throw Error(ErrorCode::Cancelled, "model loading was cancelled");
}

Buffer WeightLoader::stacked_matrix(const std::vector<std::string>& names, const std::vector<int64_t>& rows,
                                    int64_t cols) {
  return stacked(names, rows, cols);
}

Buffer WeightLoader::stacked_vector(const std::vector<std::string>& names, const std::vector<int64_t>& n) {
  return stacked(names, n, 0);
}

Buffer WeightLoader::stacked(const std::vector<std::string>& names, const std::vector<int64_t>& rows, int64_t cols) {
  for (size_t i = 0; i < names.size(); ++i)
    if (!source_.has(names[i]))
      throw Error(ErrorCode::NotFound,
                  "the checkpoint has no tensor '" + names[i] + "' (expected shape " +
                      shape_str(cols > 0 ? std::vector<int64_t>{rows[i], cols} : std::vector<int64_t>{rows[i]}) + ")");
  Buffer b = source_.load_stacked(*backend_, names, rows, cols);
  for (size_t i = 0; i < names.size(); ++i)
    advance(source_.nbytes(names[i], cols > 0 ? std::vector<int64_t>{rows[i], cols} : std::vector<int64_t>{rows[i]}));
  return b;
}

}  // namespace inferdesk
