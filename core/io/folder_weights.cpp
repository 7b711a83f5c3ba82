#include "core/io/folder_weights.h"

#include "core/util/error.h"

namespace inferdesk {

namespace {

class FolderWeights : public WeightSource {
 public:
  explicit FolderWeights(const ModelFolder& folder) : folder_(folder) {}
  bool has(const std::string& name) const override { return folder_.find(name) != nullptr; }
  Buffer load(Backend& backend, const std::string& name, const std::vector<int64_t>& shape) override {
    const HostTensor& t = folder_.get(name, shape);
    check_dtype(t, name);
    auto [rows, cols] = weight_rows_cols(shape);
    return backend.load_weight(t, rows, cols);
  }
  int64_t nbytes(const std::string& name, const std::vector<int64_t>&) const override {
    const HostTensor* t = folder_.find(name);
    return t ? static_cast<int64_t>(t->nbytes) : 0;
  }
  int64_t total_bytes() const override { return folder_.weight_bytes(); }
  Buffer load_stacked(Backend& backend, const std::vector<std::string>& names, const std::vector<int64_t>& rows,
                      int64_t cols) override {
    std::vector<HostTensor> parts;
    for (size_t i = 0; i < names.size(); ++i) {
      std::vector<int64_t> shape = cols > 0 ? std::vector<int64_t>{rows[i], cols} : std::vector<int64_t>{rows[i]};
      const HostTensor& t = folder_.get(names[i], shape);
      check_dtype(t, names[i]);
      parts.push_back(t);
    }
    int64_t total = 0;
    for (int64_t r : rows) total += r;
    return cols > 0 ? backend.load_weight_rows(parts, cols) : backend.load_weight_rows(parts, total);
  }

 private:
  static void check_dtype(const HostTensor& t, const std::string& name) {
    if (t.dtype != DType::F32 && t.dtype != DType::F16 && t.dtype != DType::BF16)
      throw Error(ErrorCode::Unsupported,
                  "tensor '" + name + "' has dtype " + dtype_name(t.dtype) + "; weights must be F32, F16 or BF16");
  }
  const ModelFolder& folder_;
};

}  // namespace

std::unique_ptr<WeightSource> make_folder_weights(const ModelFolder& folder) {
  return std::make_unique<FolderWeights>(folder);
}

}  // namespace inferdesk
