// sinew/core/rng.hpp: a seeded random source whose results do not depend on the standard library.
//
// std::uniform_real_distribution differs between libstdc++ and libc++; initial weights and
// augmentation must not, so sinew maps mt19937_64's raw bits itself.
#pragma once

#include <cstdint>
#include <random>

namespace sinew {

/// SplitMix64's finaliser: a bijection of 64-bit words whose output bits all depend on every input bit.
/// Derives independent seeds from (seed, stream) pairs: mix64(seed ^ mix64(stream)).
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// The random generator of parameter initialisation: a 64-bit Mersenne Twister seeded with the model seed,
/// so that one seed gives one network on every backend.
class Rng {
 public:
  /// Seeds the generator.
  explicit Rng(std::uint64_t seed = 0) : engine_(seed) {}

  /// The next 64 random bits.
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
