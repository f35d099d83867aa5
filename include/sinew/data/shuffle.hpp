// sinew/data/shuffle.hpp: the order in which an epoch visits a dataset, the same everywhere.
//
// Every rank must agree on the permutation (sharding relies on it), and a run must be repeatable on
// another machine. std::shuffle and std::uniform_int_distribution are free to differ between standard
// libraries; std::mt19937_64 is fixed by the standard, so everything here is built on it alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

namespace sinew::data {

/// A uniform integer in [0, bound), bound > 0, with no modulo bias: draws below 2^64 mod bound are
/// rejected, so the accepted range is a whole number of copies of [0, bound) (OpenBSD's arc4random_uniform).
inline std::uint64_t bounded_uniform(std::mt19937_64& rng, std::uint64_t bound) {
  const std::uint64_t threshold = (std::uint64_t{0} - bound) % bound;  // 2^64 mod bound
  for (;;)
    if (const std::uint64_t x = rng(); x >= threshold) return x % bound;
}

/// The engine for (seed, epoch). splitmix64 mixes the pair so that nearby seeds and epochs start
/// unrelated streams rather than ones that differ in a bit or two of the seed.
inline std::mt19937_64 epoch_engine(std::uint64_t seed, int epoch) {
  const auto mix = [](std::uint64_t z) {
    z += 0x9E3779B97F4A7C15u;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
  };
  return std::mt19937_64(mix(seed ^ mix(static_cast<std::uint64_t>(static_cast<std::int64_t>(epoch)))));
}

/// The permutation of [0, n) for (seed, epoch), by Fisher-Yates on epoch_engine: identical on every
/// rank, platform and standard library.
inline std::vector<std::size_t> epoch_permutation(std::size_t n, std::uint64_t seed, int epoch) {
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::mt19937_64 rng = epoch_engine(seed, epoch);
  for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[bounded_uniform(rng, i)]);
  return order;
}

}  // namespace sinew::data
