// splitmix64 (Steele, Lea, Flood): a 64-bit mixer used where the same seed must give the same
// values on every backend (random weights of dummy models: the CPU backend and the CUDA kernels
// call this one definition; nvcc compiles it for the device with --expt-relaxed-constexpr).
#pragma once

#include <cstdint>

namespace inferdesk {

constexpr uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace inferdesk
