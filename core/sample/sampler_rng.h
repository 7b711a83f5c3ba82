// SamplerRng: one request's own random generator (std::mt19937_64).
//
// Each request owns one, seeded from SamplingParams::seed or, for unseeded requests, from a
// random seed chosen at submission (random_seed()). The sampler draws exactly one uniform number
// per randomly sampled token and none for greedy tokens, so a seeded request produces the same
// tokens whatever else is batched with it.
#pragma once

#include <cstdint>
#include <random>

namespace inferdesk {

class SamplerRng {
 public:
  explicit SamplerRng(uint64_t seed) : engine_(seed) {}

  // A seed for an unseeded request (from std::random_device).
  static uint64_t random_seed() {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

 private:
  std::mt19937_64 engine_;
};

}  // namespace inferdesk
