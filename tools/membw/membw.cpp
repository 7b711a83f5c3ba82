// inferdesk-membw: memory READ bandwidth with all cores, printed as JSON.
//
// Every thread sums its own slice of a buffer much larger than the last-level cache with the
// widest vector loads the CPU has (AVX-512, AVX2 or plain C++); the threads start together at a
// barrier and the time of the slowest decides a run. The median of the runs is reported, next to
// the best, in decimal GB/s (1e9 bytes per second), the unit the decode roofline uses.
//
//   inferdesk-membw [--size-mib N] [--runs N] [--threads N]
#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

using SumFn = double (*)(const float*, size_t);

double sum_scalar(const float* p, size_t n) {
  float a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (size_t i = 0; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) a[j] += p[i + j];
  double s = 0;
  for (float v : a) s += v;
  return s;
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) double sum_avx2(const float* p, size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
  }
  float t[8];
  _mm256_storeu_ps(t, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  double s = 0;
  for (float v : t) s += v;
  return s;
}

__attribute__((target("avx512f"))) double sum_avx512(const float* p, size_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 64 <= n; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
    a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
  }
  float t[16];
  _mm512_storeu_ps(t, _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  double s = 0;
  for (float v : t) s += v;
  return s;
}
#endif

SumFn pick(const char** name) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    *name = "avx512";
    return sum_avx512;
  }
  if (__builtin_cpu_supports("avx2")) {
    *name = "avx2";
    return sum_avx2;
  }
#endif
  *name = "scalar";
  return sum_scalar;
}

bool parse_int(const char* s, long* out) {
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (!end || *end != '\0' || v <= 0) return false;
  *out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  long size_mib = 1024, runs = 9, threads = static_cast<long>(std::thread::hardware_concurrency());
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    long* target = a == "--size-mib" ? &size_mib : a == "--runs" ? &runs : a == "--threads" ? &threads : nullptr;
    if (!target || i + 1 >= argc || !parse_int(argv[i + 1], target)) {
      std::fprintf(stderr, "usage: inferdesk-membw [--size-mib N] [--runs N] [--threads N]\n");
      return 2;
    }
    ++i;
  }
  threads = std::max(1L, threads);
  const char* isa = "scalar";
  const SumFn sum = pick(&isa);
  const size_t n = static_cast<size_t>(size_mib) * 1024 * 1024 / sizeof(float);
  const size_t per = (n / threads) / 64 * 64;
  float* buf = static_cast<float*>(std::aligned_alloc(64, n * sizeof(float)));
  if (!buf) {
    std::fprintf(stderr, "inferdesk-membw: cannot allocate %ld MiB\n", size_mib);
    return 1;
  }
  std::vector<double> seconds;
  std::vector<double> sink(static_cast<size_t>(threads), 0.0);
  std::barrier sync(threads + 1);
  std::vector<std::thread> pool;
  for (long t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      float* mine = buf + t * per;
      for (size_t i = 0; i < per; ++i) mine[i] = static_cast<float>(i & 1023);  // first touch
      for (long r = 0; r < runs + 1; ++r) {
        sync.arrive_and_wait();
        sink[t] += sum(mine, per);
        sync.arrive_and_wait();
      }
    });
  }
  for (long r = 0; r < runs + 1; ++r) {  // run 0 warms up
    sync.arrive_and_wait();
    auto t0 = std::chrono::steady_clock::now();
    sync.arrive_and_wait();
    auto t1 = std::chrono::steady_clock::now();
    if (r > 0) seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  for (auto& th : pool) th.join();
  std::free(buf);
  std::sort(seconds.begin(), seconds.end());
  const double bytes = static_cast<double>(per) * threads * sizeof(float);
  const double median = bytes / seconds[seconds.size() / 2] / 1e9;
  const double best = bytes / seconds.front() / 1e9;
  double check = 0;
  for (double s : sink) check += s;
  std::printf("{\"tool\": \"inferdesk-membw\", \"isa\": \"%s\", \"threads\": %ld, \"buffer_bytes\": %.0f, "
              "\"runs\": %ld, \"read_gbps_median\": %.2f, \"read_gbps_best\": %.2f, \"checksum\": %.0f}\n",
              isa, threads, bytes, runs, median, best, check);
  return 0;
}
