#include "core/model/weights.h"

#include <cmath>

#include "core/util/error.h"

namespace inferdesk {

namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

class DummyWeights : public WeightSource {
 public:
  DummyWeights(uint64_t seed, int64_t total, bool tied_embeddings)
      : seed_(seed), total_(total), tied_(tied_embeddings) {}
  // Every tensor but a tied shape's lm_head: such a model reuses its embedding, as the published
  // checkpoint does (a separate head would take memory the real model does not, and load more
  // bytes than total_bytes counts).
  bool has(const std::string& name) const override { return !(tied_ && name == "lm_head.weight"); }
  Buffer load(Backend& backend, const std::string& name, const std::vector<int64_t>& shape) override {
    auto [rows, cols] = weight_rows_cols(shape);
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
    Buffer b = backend.alloc(DType::BF16, total, cols);
    int64_t at = 0;
    for (size_t i = 0; i < names.size(); ++i) {
      fill(backend, b.tensor().row_slice(at, rows[i]), names[i]);
      at += rows[i];
    }
    return b;
  }
  int64_t nbytes(const std::string&, const std::vector<int64_t>& shape) const override {
    int64_t n = 2;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int64_t total_bytes() const override { return total_; }

 private:
  // The same values whether the tensor is loaded alone or stacked with others.
  void fill(Backend& backend, Tensor t, const std::string& name) const {
    const uint64_t seed = seed_ ^ std::hash<std::string>{}(name);
    // Matrices: uniform with variance ~1/fan_in keeps activations finite through many layers.
    const float scale = t.rows == 1 ? 1.0f : std::sqrt(3.0f / static_cast<float>(t.cols));
    backend.fill_random(t, seed, scale);
  }
  uint64_t seed_;
  int64_t total_;
  bool tied_;
};

}  // namespace

std::pair<int64_t, int64_t> weight_rows_cols(const std::vector<int64_t>& shape) {
  if (shape.size() == 1) return {1, shape[0]};
  if (shape.size() == 2) return {shape[0], shape[1]};
  throw Error(ErrorCode::Internal, "weights are 1-D or 2-D");
}

std::unique_ptr<WeightSource> make_dummy_weights(uint64_t seed, int64_t total_bytes_hint, bool tied_embeddings) {
  return std::make_unique<DummyWeights>(seed, total_bytes_hint, tied_embeddings);
}

WeightLoader::WeightLoader(WeightSource& source, Backend& backend, LoadProgress progress)
    : source_(source), backend_(backend), progress_(std::move(progress)) {}

Buffer WeightLoader::matrix(const std::string& name, int64_t rows, int64_t cols) { return load(name, {rows, cols}); }

Buffer WeightLoader::vector(const std::string& name, int64_t n) { return load(name, {n}); }

Buffer WeightLoader::load(const std::string& name, const std::vector<int64_t>& shape) {
  if (!source_.has(name))
    throw Error(ErrorCode::NotFound,
                "the checkpoint has no tensor '" + name + "' (expected shape " + shape_str(shape) + ")");
  Buffer b = source_.load(backend_, name, shape);
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
  Buffer b = source_.load_stacked(backend_, names, rows, cols);
  for (size_t i = 0; i < names.size(); ++i)
    advance(source_.nbytes(names[i], cols > 0 ? std::vector<int64_t>{rows[i], cols} : std::vector<int64_t>{rows[i]}));
  return b;
}

}  // namespace inferdesk
