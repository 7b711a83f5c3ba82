#include "cuda/backend/graph_runner.h"

#include <algorithm>
#include <string>

#include "core/util/error.h"
#include "cuda/backend/cuda_handles.h"

namespace inferdesk::cuda {

namespace {
const std::vector<int> kDefaultBuckets = {1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256};
}  // namespace

GraphRunner::GraphRunner(cudaStream_t stream, bool enabled, std::vector<int> buckets)
    : stream_(stream), enabled_(enabled), buckets_(std::move(buckets)) {
  if (buckets_.empty()) buckets_ = kDefaultBuckets;
  std::sort(buckets_.begin(), buckets_.end());
}

GraphRunner::~GraphRunner() { invalidate(); }

int GraphRunner::bucket(int32_t n, int32_t max_rows) const {
  if (!enabled_) return 0;
  for (int b : buckets_)
    if (b >= n) return b <= max_rows ? b : 0;
  return 0;
}

bool GraphRunner::begin(int bucket) {
  replaying_ = 0;
  if (graphs_.count(bucket)) {
    replaying_ = bucket;
    return true;
  }
  if (eager_runs_[bucket]++ == 0) return false;
  check_cuda(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "graph capture");
  capturing_ = bucket;
  return false;
}

void GraphRunner::end() {
  if (capturing_) {
    cudaGraph_t g = nullptr;
    const int bucket = capturing_;
    capturing_ = 0;
    check_cuda(cudaStreamEndCapture(stream_, &g), "ending graph capture");
    cudaGraphExec_t exec = nullptr;
    const cudaError_t e = cudaGraphInstantiate(&exec, g, 0);
    cudaGraphDestroy(g);
    check_cuda(e, "instantiating a CUDA graph");
    graphs_[bucket] = exec;
    replaying_ = bucket;
  }
  if (replaying_) {
    check_cuda(cudaGraphLaunch(graphs_.at(replaying_), stream_), "launching a CUDA graph");
    replaying_ = 0;
  }
}

void GraphRunner::abort() {
  replaying_ = 0;
  if (!capturing_) return;
  cudaGraph_t g = nullptr;
  cudaStreamEndCapture(stream_, &g);
  if (g) cudaGraphDestroy(g);
  cudaGetLastError();
  capturing_ = 0;
}

void GraphRunner::invalidate() {
  for (auto& [b, exec] : graphs_) cudaGraphExecDestroy(exec);
  graphs_.clear();
}

void GraphRunner::forbid_capture(const char* what) const {
  if (capturing_) throw Error(ErrorCode::Internal, std::string(what) + " inside a graph capture");
}

}  // namespace inferdesk::cuda
