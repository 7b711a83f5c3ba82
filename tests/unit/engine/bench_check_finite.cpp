// What the load-time NaN/Inf scan (check_finite, core/model/model_validation.h) costs: its
// throughput on 512 MiB against a memcpy of the same bytes, and its share of load_model_folder on
// a golden fixture (CPU backend, weights mmapped). Figures: docs/PERF.md#load-checks.
//   bench_check_finite [MODEL_DIR]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/engine/model_loader.h"
#include "core/model/model_validation.h"

namespace {

using namespace inferdesk;
using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void throughput() {
  const size_t bytes = size_t{512} << 20;
  std::vector<std::byte> src(bytes + 1), dst(bytes);
  for (size_t i = 0; i < src.size(); ++i) src[i] = std::byte((i * 37) & 0x3F);  // finite in every dtype
  for (DType dt : {DType::BF16, DType::F32}) {
    const int64_t n = static_cast<int64_t>(bytes / dtype_size(dt));
    const HostTensor t{"x", dt, {n / 4096, 4096}, src.data() + 1, bytes};  // unaligned, as in a mapping
    std::vector<double> scan, copy;
    for (int r = 0; r < 7; ++r) {
      const auto t0 = Clock::now();
      check_finite(t, "x");
      const auto t1 = Clock::now();
      std::memcpy(dst.data(), src.data() + 1, bytes);
      const auto t2 = Clock::now();
      scan.push_back(seconds(t0, t1));
      copy.push_back(seconds(t1, t2));
    }
    std::printf("%s: check_finite %.1f GB/s, memcpy %.1f GB/s (512 MiB, medians of 7)\n", dtype_name(dt),
                bytes / median(scan) / 1e9, bytes / median(copy) / 1e9);
  }
}

void share_of_load(const char* dir) {
  std::vector<double> load, scan;
  for (int r = 0; r < 21; ++r) {
    const auto t0 = Clock::now();
    LoadedModel m = load_model_folder(dir, make_cpu_backend(1));
    const auto t1 = Clock::now();
    for (const auto& shard : m.folder->shards())
      for (const HostTensor& t : shard.tensors()) check_finite(t, t.name);
    const auto t2 = Clock::now();
    load.push_back(seconds(t0, t1));
    scan.push_back(seconds(t1, t2));
  }
  std::printf("%s: load_model_folder %.3f ms (its scan included), check_finite of every tensor %.3f ms (medians of "
              "21)\n",
              dir, median(load) * 1e3, median(scan) * 1e3);
}

}  // namespace

int main(int argc, char** argv) {
  throughput();
  if (argc > 1) share_of_load(argv[1]);
}
