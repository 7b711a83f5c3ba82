// bench_cpu_int: weight-stream GB/s of the CPU integer linears (not a test; run by hand).
//
//   bench_cpu_int [--threads N] [--isa auto|avx512|avx2|scalar] [--cached 1]
//
// [8192 out, 2048 in] weights of each scheme (int4 g128, int4 g128 + zeros, int8 per channel,
// W8A8, BF16 for comparison) against T = 1, 2, 4, 8 rows; enough distinct matrices are cycled
// that every call streams its weights (codes + scales) from DRAM. Median of 9 repetitions.
// --cached 1: one [256, 2048] matrix per scheme instead, read from L2: the kernels' compute ceiling.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/backend/cpu/cpu_backend.h"

using namespace inferdesk;

namespace {

struct Weights {
  std::vector<std::vector<uint8_t>> codes;
  std::vector<Buffer> bufs;
  int64_t bytes = 0;  // per matrix, codes + scales + zeros
};

Weights make(Backend& be, int bits, bool zeros, ActQuant act, int count, int64_t N, int64_t K) {
  Weights w;
  const int64_t cb = bits == 4 ? K / 2 : K, G = bits == 4 ? K / 128 : 1;
  std::mt19937_64 rng(1);
  std::vector<float> s(static_cast<size_t>(N * G), 0.01f), z(s.size(), 1.0f);
  for (int i = 0; i < count; ++i) {
    auto& c = w.codes.emplace_back(static_cast<size_t>(N * cb));
    for (auto& b : c) b = static_cast<uint8_t>(rng());
    HostTensor h{"w", bits == 4 ? DType::U8 : DType::I8, {N, cb}, reinterpret_cast<const std::byte*>(c.data()),
                 c.size()};
    Buffer b = be.load_weight(h, N, cb);
    QuantInfo q;
    q.scheme = QuantScheme::Int;
    q.bits = bits;
    q.granularity = bits == 4 ? ScaleGranularity::Group : ScaleGranularity::Channel;
    q.group_size = bits == 4 ? 128 : 0;
    q.in_features = K;
    q.scale_rows = N;
    q.scale_cols = G;
    q.has_zero_point = zeros;
    q.act = act;
    b.set_quant(q, be.load_scales(s.data(), N, G), zeros ? be.load_scales(z.data(), N, G) : Buffer{});
    w.bufs.push_back(std::move(b));
  }
  w.bytes = N * cb + N * G * 4 * (zeros ? 2 : 1);
  return w;
}

double gbps(Backend& be, const std::vector<Buffer>& ws, int64_t bytes, int64_t T, int64_t N, int64_t K) {
  Buffer x = be.alloc(DType::F32, T, K), o = be.alloc(DType::F32, T, N);
  for (int64_t i = 0; i < T * K; ++i) static_cast<float*>(x.tensor().data)[i] = 0.001f * static_cast<float>(i % 97);
  std::vector<double> v;
  for (int rep = 0; rep < 9; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (const Buffer& w : ws) be.linear(x.tensor(), w.tensor(), nullptr, o.tensor());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    v.push_back(static_cast<double>(bytes) * static_cast<double>(ws.size()) / s / 1e9);
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CpuBackendOptions o;
  bool cached = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--cached") cached = v == "1";
    if (a == "--threads") o.num_threads = std::atoi(v.c_str());
    if (a == "--isa")
      o.isa = v == "avx512" ? CpuIsa::Avx512 : v == "avx2" ? CpuIsa::Avx2 : v == "scalar" ? CpuIsa::Scalar : CpuIsa::Auto;
  }
  auto be = make_cpu_backend(o);
  const int64_t N = cached ? 256 : 8192, K = 2048;
  std::printf("{\"backend\": \"%s\"}\n", be->name().c_str());
  struct Case {
    const char* name;
    int bits;
    bool zeros;
    ActQuant act;
    int count;
  };
  for (const Case& c : {Case{"int4_g128", 4, false, ActQuant::None, 32}, Case{"int4_g128_zp", 4, true, ActQuant::None, 32},
                        Case{"int8_channel", 8, false, ActQuant::None, 16},
                        Case{"w8a8", 8, false, ActQuant::DynamicToken, 16}}) {
    const Weights w = make(*be, c.bits, c.zeros, c.act, cached ? 1 : c.count, N, K);
    for (int64_t T : {1, 2, 4, 8})
      std::printf("{\"scheme\": \"%s\", \"T\": %ld, \"GBps\": %.2f}\n", c.name, static_cast<long>(T),
                  gbps(*be, w.bufs, w.bytes, T, N, K));
  }
  return 0;
}
