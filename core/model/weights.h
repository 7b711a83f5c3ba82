// Where a model's weights come from: a Hugging Face folder (mmapped safetensors) or random values
// of a published shape (dummy-weight benchmarks). Architectures ask for tensors by hub name and
// expected shape; a missing or mis-shaped tensor is a Format error naming it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/backend/backend.h"
#include "core/model/config.h"

namespace inferdesk {

// Called after each tensor is loaded with (bytes loaded so far, total bytes); return false to
// cancel the load (load_model then throws ErrorCode::Cancelled).
using LoadProgress = std::function<bool(int64_t done, int64_t total)>;

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  virtual bool has(const std::string& name) const = 0;
  // Load `name`, which must have exactly `shape` (1-D or 2-D), as a [rows, cols] backend tensor.
  virtual Buffer load(Backend& backend, const std::string& name, const std::vector<int64_t>& shape) = 0;
  // Throws what load(name, shape) would for a tensor that is not there as `shape` asks (missing,
  // mis-shaped, an unusable dtype, an FP8 weight without its scale), without reading its bytes.
  // The default accepts everything (random weights fit any shape).
  virtual void check(const std::string& name, const std::vector<int64_t>& shape) const {}
  // Bytes `name` takes in the source, and of all weights (for progress).
  virtual int64_t nbytes(const std::string& name, const std::vector<int64_t>& shape) const = 0;
  virtual int64_t total_bytes() const = 0;
  // Tensors `names` (each [rows[i], cols], or 1-D [rows[i]] when cols == 0: then concatenated into
  // one row) stacked into one backend weight by Backend::load_weight_rows.
  virtual Buffer load_stacked(Backend& backend, const std::vector<std::string>& names, const std::vector<int64_t>& rows,
                              int64_t cols) = 0;
  // Whether load_stacked can stack these matrices: block-scaled FP8 parts must each fill whole
  // scale blocks (a 64-row k_proj of 128-row blocks cannot); the caller then loads them apart.
  virtual bool can_stack(const std::vector<std::string>& names, const std::vector<int64_t>& rows, int64_t cols) const {
    return true;
  }
};

// F32 scales of one quantized weight, [rows, cols] row-major, in the layout QuantInfo describes.
struct HostScales {
  std::vector<float> values;
  int64_t rows = 0;
  int64_t cols = 0;
};

// Uploads `s` and attaches them with `q` to the weight buffer `w` (Buffer::set_quant). Throws
// Unsupported, naming `what` and the scheme, when the backend does not run it.
Buffer attach_scales(Backend& backend, Buffer w, const QuantInfo& q, const HostScales& s, const std::string& what);

// The [rows, cols] of a backend tensor holding a weight of `shape` (1-D: one row; 2-D as is).
// For WeightSource implementations (a folder's weights: core/io/folder_weights.h).
std::pair<int64_t, int64_t> weight_rows_cols(const std::vector<int64_t>& shape);

// Random BF16 weights (uniform, scaled by 1/sqrt(fan_in); norms around 1) for any tensor asked,
// except lm_head.weight when the embeddings are tied (the model then reuses the embedding). With
// `fp8`, the projections (is_projection_module) are random E4M3 codes with per-channel scales of the
// same magnitude, dynamic per-token activations (the FP8 checkpoints' shapes for benchmarks).
std::unique_ptr<WeightSource> make_dummy_weights(uint64_t seed, int64_t total_bytes_hint, bool tied_embeddings,
                                                 bool fp8 = false);

// Integer dummy weights: the projections are random codes with random scales (and zero points)
// written straight in the canonical layout of `scheme` (QuantScheme::Int, core/backend/quant.h),
// no float weights first. Embeddings stay BF16; lm_head too unless `quantize_lm_head` (AWQ and
// GPTQ checkpoints keep it unquantized; a tied head then becomes a separate quantized copy).
std::unique_ptr<WeightSource> make_dummy_int_weights(uint64_t seed, int64_t total_bytes_hint, bool tied_embeddings,
                                                     const QuantInfo& scheme, bool quantize_lm_head = false);

// What an architecture file uses while loading: a source, a backend and progress reporting.
class WeightLoader {
 public:
  WeightLoader(WeightSource& source, Backend& backend, LoadProgress progress);
  // A dry run (model_validation.h): each tensor asked is checked (WeightSource::check), none is
  // loaded, and every Buffer returned is empty.
  explicit WeightLoader(WeightSource& source);
  bool has(const std::string& name) const { return source_.has(name); }
  Buffer matrix(const std::string& name, int64_t rows, int64_t cols);
  Buffer vector(const std::string& name, int64_t n);
  // Whether the backend wants stacked q/k/v and gate/up weights (Backend::wants_fused_weights).
  // A dry run checks each part on its own: the same tensors.
  bool stacks_weights() const { return backend_ && backend_->wants_fused_weights(); }
  // Whether these matrices are to be stacked: the backend wants it and the source can.
  bool stacks(const std::vector<std::string>& names, const std::vector<int64_t>& rows, int64_t cols) const {
    return stacks_weights() && source_.can_stack(names, rows, cols);
  }
  // Matrices names[i] of [rows[i], cols] stacked by rows into one weight.
  Buffer stacked_matrix(const std::vector<std::string>& names, const std::vector<int64_t>& rows, int64_t cols);
  // Vectors names[i] of [n[i]] concatenated into one [1, sum n] weight.
  Buffer stacked_vector(const std::vector<std::string>& names, const std::vector<int64_t>& n);

 private:
  Buffer load(const std::string& name, const std::vector<int64_t>& shape);
  Buffer stacked(const std::vector<std::string>& names, const std::vector<int64_t>& rows, int64_t cols);
  void advance(int64_t bytes);
  WeightSource& source_;
  Backend* backend_ = nullptr;  // null: a dry run
  LoadProgress progress_;
  int64_t done_ = 0;
};

}  // namespace inferdesk
