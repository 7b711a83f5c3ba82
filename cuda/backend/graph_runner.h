// CUDA graphs of decode steps, one per batch-size bucket: a bucket's first step runs eagerly (GEMM
// autotuning and one-time uploads happen outside any capture), its second is captured, every later
// one replays the graph. Anything a graph points at may only move outside a capture, and moving it
// invalidates the graphs.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <vector>

namespace inferdesk::cuda {

class GraphRunner {
 public:
  GraphRunner(cudaStream_t stream, bool enabled, std::vector<int> buckets);
  ~GraphRunner();
  GraphRunner(const GraphRunner&) = delete;
  GraphRunner& operator=(const GraphRunner&) = delete;

  // The smallest bucket holding n rows and at most max_rows (0: no graph for n rows).
  int bucket(int32_t n, int32_t max_rows) const;
  // What a step of `bucket` does: replay its graph (true: the model issues no ops), or run its ops
  // eagerly, captured when this is the bucket's second step.
  bool begin(int bucket);
  // Ends the capture (instantiating the graph) and launches the graph of a replayed or captured
  // step.
  void end();
  // Drops a capture a failed step left open.
  void abort();
  void invalidate();
  bool capturing() const { return capturing_ != 0; }
  // Throws Error(Internal) when called inside a capture (`what` may not allocate or upload there).
  void forbid_capture(const char* what) const;

 private:
  cudaStream_t stream_;
  bool enabled_;
  std::vector<int> buckets_;
  std::map<int, cudaGraphExec_t> graphs_;
  std::map<int, int> eager_runs_;  // steps run eagerly per bucket
  int capturing_ = 0;              // bucket being captured
  int replaying_ = 0;              // bucket whose graph end() launches
};

}  // namespace inferdesk::cuda
