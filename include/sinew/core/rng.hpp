// sinew/core/rng.hpp: a seeded random source whose results do not depend on the standard library.
//
// std::uniform_real_distribution differs between libstdc++ and libc++; initial weights and
// augmentation must not, so sinew maps mt19937_64's raw bits itself.
#pragma once

#include <cstdint>
#include <random>

namespace sinew {

class Rng {
 public:
  explicit Rng(std::uint64_t seed = 0) : engine_(seed) {}

  std::uint64_t next() { return engine_(); }

  /// Uniform in [0, 1) with 24 random bits: every float in the range is exactly representable.
  float uniform01() { return float(engine_() >> 40) * (1.0f / 16777216.0f); }

  /// Uniform in [lo, hi).
  float uniform(float lo, float hi) { return lo + (hi - lo) * uniform01(); }

  /// Uniform integer in [0, n), without modulo bias (Lemire's multiply-and-reject).
  std::uint64_t below(std::uint64_t n) {
    if (n <= 1) return 0;
    for (;;) {
      const unsigned __int128 m = (unsigned __int128)engine_() * n;
      const auto low = std::uint64_t(m);
      if (low >= n || low >= (-n) % n) return std::uint64_t(m >> 64);
    }
  }

  /// Standard normal (Box-Muller on uniform01): for tests and synthetic data.
  float normal();

 private:
  std::mt19937_64 engine_;
};

}  // namespace sinew

#include <cmath>

inline float sinew::Rng::normal() {
  float u1 = uniform01();
  while (u1 <= 0.0f) u1 = uniform01();
  const float u2 = uniform01();
  return std::sqrt(-2.0f * std::log(u1)) * std::cos(6.2831853071795864f * u2);
}
