// tests/support/corners.hpp: a small learnable problem for training tests. Two classes of 1 x 12 x 12 images:
// a bright square in the top-left or the bottom-right corner, plus noise.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#include "sinew/core/rng.hpp"
#include "sinew/data/cached_loader.hpp"
#include "sinew/data/dataset.hpp"
#include "sinew/data/loader_options.hpp"

namespace sinew::test {

inline data::Dataset corners(std::size_t n, std::uint64_t seed) {
  data::Dataset d;
  d.channels = 1, d.height = 12, d.width = 12, d.num_classes = 2;
  d.pixels.resize(n * 144);
  d.labels.resize(n);
  Rng rng(seed);
  for (std::size_t i = 0; i < n; ++i) {
    const int label = int(rng.below(2));
    d.labels[i] = label;
    for (int y = 0; y < 12; ++y)
      for (int x = 0; x < 12; ++x) {
        const bool in_square = label == 0 ? (y < 5 && x < 5) : (y >= 7 && x >= 7);
        d.pixels[i * 144 + y * 12 + x] =
            std::uint8_t(std::min<float>(255, (in_square ? 160 : 40) + 40 * rng.uniform01()));
      }
  }
  return d;
}

/// A loader over a corners() set with the normalisation every corners test uses (mean 0.3, std 0.25); `o` says
/// the rest: batch size, order, seed and this worker's share.
inline data::CachedLoader corners_loader(const data::Dataset& d, data::LoaderOptions o) {
  o.mean = {0.3f};
  o.std = {0.25f};
  return data::CachedLoader(d, std::move(o));
}

}  // namespace sinew::test
