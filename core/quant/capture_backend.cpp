#include "core/quant/capture_backend.h"

#include "core/util/error.h"

namespace inferdesk {

CaptureBackend::CaptureBackend(std::unique_ptr<Backend> inner, const std::map<std::string, HostTensor>* replace,
                               std::set<std::string> watch)
    : inner_(std::move(inner)), replace_(replace), watch_(std::move(watch)) {
  if (!inner_) throw Error(ErrorCode::Internal, "CaptureBackend needs a backend");
}

const Matrix& CaptureBackend::inputs(const std::string& name) const {
  static const Matrix kEmpty;
  const auto it = inputs_.find(name);
  return it == inputs_.end() ? kEmpty : it->second;
}

Buffer CaptureBackend::load_weight(const HostTensor& host, int64_t rows, int64_t cols) {
  const HostTensor* use = &host;
  if (replace_) {
    const auto it = replace_->find(host.name);
    if (it != replace_->end()) use = &it->second;
  }
  Buffer b = inner_->load_weight(*use, rows, cols);
  if (watch_.count(host.name)) watched_data_[b.tensor().data] = host.name;
  return b;
}

void CaptureBackend::linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor out) {
  const auto it = watched_data_.find(w.data);
  if (it != watched_data_.end()) {
    Matrix& m = inputs_[it->second];
    m.cols = x.cols;
    const size_t at = m.v.size();
    m.v.resize(at + static_cast<size_t>(x.rows * x.cols));
    inner_->to_host(x, m.v.data() + at);
    m.rows += x.rows;
  }
  inner_->linear(x, w, bias, out);
}

}  // namespace inferdesk
