// Microbenchmark of sample_rows (not a test): times it with CUDA events on realistic shapes and
// settings and prints microseconds per call and the logits read rate (rows * vocab * 4 bytes per
// call / time; the kernels read a row one to a dozen times depending on the filters). The main
// figure is device time: `kIters` calls captured into one CUDA graph, the median of `kReps`
// replays (no CPU launch overhead; sample_rows launches two kernels). "loop" is the same calls
// launched one by one from the host, which is bound by launch overhead for small work.
//
//   bench_gpu_sampling [vocab [rows]]      (default: a sweep over common vocabularies and batches)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "cuda/kernels/launch.h"
#include "cuda/kernels/sampling.h"

namespace {

using inferdesk::cuda::SampleArgs;
using inferdesk::cuda::SampleRowDev;

constexpr int kIters = 20;  // calls per graph (and per host loop)
constexpr int kReps = 5;    // graph replays timed (median)

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
  return false;
}

struct Setting {
  const char* name;
  SampleRowDev p;
};

// name, temperature, top_k, top_p, min_p, num_logprobs, with 512 penalty entries
Setting make(const char* name, float t, int32_t k, float p, float min_p, int32_t logprobs, bool penalties) {
  Setting s{name, {}};
  s.p.temperature = t;
  s.p.top_k = k;
  s.p.top_p = p;
  s.p.min_p = min_p;
  s.p.num_logprobs = logprobs;
  if (penalties) {
    s.p.repetition_penalty = 1.1f;
    s.p.presence_penalty = 0.5f;
    s.p.penalty_count = 512;
  }
  return s;
}

std::vector<Setting> settings() {
  return {make("greedy", 0.0f, 0, 1.0f, 0.0f, 0, false),
          make("greedy+logprobs5", 0.0f, 0, 1.0f, 0.0f, 5, false),
          make("temperature", 1.0f, 0, 1.0f, 0.0f, 0, false),
          make("top_p0.9", 1.0f, 0, 0.9f, 0.0f, 0, false),
          make("T0.7+top_k20+top_p0.8", 0.7f, 20, 0.8f, 0.0f, 0, false),
          make("chat+penalties", 0.7f, 20, 0.8f, 0.0f, 0, true),
          make("top_k2000+min_p", 1.0f, 2000, 1.0f, 0.01f, 0, false)};
}

bool run(int32_t vocab, int32_t rows, const Setting& st) {
  std::mt19937_64 g(7);
  std::normal_distribution<float> nd(0.0f, 2.5f);
  std::vector<float> logits(static_cast<size_t>(rows) * vocab);
  for (float& x : logits) x = nd(g);
  std::vector<SampleRowDev> params(static_cast<size_t>(rows), st.p);
  std::vector<int32_t> pen_tokens(static_cast<size_t>(rows) * 512), pen_counts(pen_tokens.size());
  std::uniform_int_distribution<int32_t> id(0, vocab - 1);
  for (int32_t r = 0; r < rows; ++r) {
    params[static_cast<size_t>(r)].seed = 1234 + static_cast<uint64_t>(r);
    params[static_cast<size_t>(r)].counter = static_cast<uint64_t>(r);
    params[static_cast<size_t>(r)].penalty_start = r * 512;
    for (int k = 0; k < 512; ++k) {  // distinct ids: a walk by the prime 211 (vocab not a multiple)
      pen_tokens[static_cast<size_t>(r) * 512 + k] = static_cast<int32_t>(
          (static_cast<int64_t>(id(g) % 97 + 1) + static_cast<int64_t>(k) * 211) % vocab);
      pen_counts[static_cast<size_t>(r) * 512 + k] = k % 3;
    }
  }
  float* d_logits = nullptr;
  SampleRowDev* d_params = nullptr;
  int32_t *d_pt = nullptr, *d_pc = nullptr, *d_tok = nullptr, *d_ids = nullptr;
  float *d_lp = nullptr, *d_tlp = nullptr;
  void* d_ws = nullptr;
  const size_t ws = inferdesk::cuda::sample_workspace_bytes(rows, vocab);
  bool good = ok(cudaMalloc(&d_logits, logits.size() * 4), "malloc") &&
              ok(cudaMalloc(&d_params, params.size() * sizeof(SampleRowDev)), "malloc") &&
              ok(cudaMalloc(&d_pt, pen_tokens.size() * 4), "malloc") &&
              ok(cudaMalloc(&d_pc, pen_counts.size() * 4), "malloc") && ok(cudaMalloc(&d_tok, rows * 4), "malloc") &&
              ok(cudaMalloc(&d_lp, rows * 4), "malloc") &&
              ok(cudaMalloc(&d_ids, rows * 4 * inferdesk::cuda::kMaxTopLogprobs), "malloc") &&
              ok(cudaMalloc(&d_tlp, rows * 4 * inferdesk::cuda::kMaxTopLogprobs), "malloc") &&
              ok(cudaMalloc(&d_ws, ws), "malloc workspace");
  if (good) {
    cudaMemcpy(d_logits, logits.data(), logits.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(d_params, params.data(), params.size() * sizeof(SampleRowDev), cudaMemcpyHostToDevice);
    cudaMemcpy(d_pt, pen_tokens.data(), pen_tokens.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(d_pc, pen_counts.data(), pen_counts.size() * 4, cudaMemcpyHostToDevice);
    SampleArgs a;
    a.logits = d_logits;
    a.logits_stride = vocab;
    a.rows = rows;
    a.vocab = vocab;
    a.row_params = d_params;
    a.penalty_tokens = d_pt;
    a.penalty_counts = d_pc;
    a.workspace = d_ws;
    a.out_token = d_tok;
    a.out_logprob = d_lp;
    a.out_top_ids = d_ids;
    a.out_top_logprobs = d_tlp;
    cudaStream_t stream = nullptr;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    good = ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream") &&
           ok(cudaEventCreate(&e0), "event") && ok(cudaEventCreate(&e1), "event");
    const inferdesk::cuda::Launch launch{stream, /*pdl=*/true};
    if (good) {
      for (int i = 0; i < 3; ++i) inferdesk::cuda::sample_rows(a, launch);  // warm up
      good = ok(cudaStreamSynchronize(stream), "sample_rows");
    }
    // Host loop: launches one by one.
    float loop_ms = 0.0f;
    if (good) {
      cudaEventRecord(e0, stream);
      for (int i = 0; i < kIters; ++i) inferdesk::cuda::sample_rows(a, launch);
      cudaEventRecord(e1, stream);
      good = ok(cudaEventSynchronize(e1), "sample_rows loop");
      cudaEventElapsedTime(&loop_ms, e0, e1);
    }
    // Device time: graph replays.
    if (good) {
      good = ok(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
      if (good) {
        for (int i = 0; i < kIters; ++i) inferdesk::cuda::sample_rows(a, launch);
        good = ok(cudaStreamEndCapture(stream, &graph), "end capture") &&
               ok(cudaGraphInstantiate(&exec, graph, 0), "instantiate") &&
               ok(cudaGraphLaunch(exec, stream), "graph launch") && ok(cudaStreamSynchronize(stream), "graph replay");
      }
    }
    std::vector<float> reps;
    for (int r = 0; good && r < kReps; ++r) {
      cudaEventRecord(e0, stream);
      cudaGraphLaunch(exec, stream);
      cudaEventRecord(e1, stream);
      good = ok(cudaEventSynchronize(e1), "graph replay");
      float ms = 0.0f;
      cudaEventElapsedTime(&ms, e0, e1);
      reps.push_back(ms);
    }
    if (good) {
      std::sort(reps.begin(), reps.end());
      const double us = 1000.0 * reps[reps.size() / 2] / kIters;
      const double loop_us = 1000.0 * loop_ms / kIters;
      const double gbs = static_cast<double>(rows) * vocab * 4.0 / (us * 1e3);
      std::printf("%-24s vocab %7d rows %4d: %9.1f us/call  %8.1f GB/s of logits  (loop %.1f us)\n", st.name, vocab,
                  rows, us, gbs, loop_us);
    }
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (stream) cudaStreamDestroy(stream);
  }
  cudaFree(d_logits);
  cudaFree(d_params);
  cudaFree(d_pt);
  cudaFree(d_pc);
  cudaFree(d_tok);
  cudaFree(d_lp);
  cudaFree(d_ids);
  cudaFree(d_tlp);
  cudaFree(d_ws);
  return good;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("bench_gpu_sampling: no CUDA GPU, nothing to measure\n");
    return 0;
  }
  std::vector<int32_t> vocabs = {32000, 128256, 151936};
  std::vector<int32_t> batches = {1, 8, 64, 256};
  if (argc > 1) vocabs = {std::atoi(argv[1])};
  if (argc > 2) batches = {std::atoi(argv[2])};
  for (int32_t v : vocabs) {
    if (v <= 0) return 2;
    for (int32_t b : batches) {
      if (b <= 0) return 2;
      for (const Setting& s : settings())
        if (!run(v, b, s)) return 1;
    }
  }
  return 0;
}
