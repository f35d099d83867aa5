// tests/support/noisy_templates.hpp: a small problem on which the parameter server's sync modes can be told apart
// by accuracy (tests/dist/test_parameter_server.cpp pins their order; bench/staleness.cpp measures it at length).
// Ten classes of 1 x 16 x 16 images: class c is a fixed random template (the same for every seed) under uniform
// noise, `signal` its share of each pixel. At signal 0.4 a small CNN reaches the high nineties in a few hundred
// steps, with errors left to tell the modes apart; at 0.5 every mode reaches ~100%.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sinew/core/rng.hpp"
#include "sinew/data/dataset.hpp"
#include "sinew/layers.hpp"
#include "sinew/nets/sequential.hpp"

namespace sinew::test {

/// Two convolutions and two dense layers, 18k parameters.
using TemplateNet = Sequential<Input<1, 16, 16>, Conv2d<8, 3, 1, 1>, ReLU, MaxPool<2>, Conv2d<16, 3, 1, 1>, ReLU,
                               MaxPool<2>, Flatten, Dense<64>, ReLU, Dense<10>>;

inline data::Dataset noisy_templates(std::size_t n, std::uint64_t seed, float signal = 0.4f) {
  data::Dataset d;
  d.channels = 1, d.height = 16, d.width = 16, d.num_classes = 10;
  std::vector<float> templates(10 * 256);
  Rng shapes(1234);
  for (float& t : templates) t = shapes.uniform01();
  d.pixels.resize(n * 256);
  d.labels.resize(n);
  Rng rng(seed);
  for (std::size_t i = 0; i < n; ++i) {
    const int label = int(rng.below(10));
    d.labels[i] = label;
    for (std::size_t p = 0; p < 256; ++p) {
      const float v = signal * templates[std::size_t(label) * 256 + p] + (1 - signal) * rng.uniform01();
      d.pixels[i * 256 + p] = std::uint8_t(255.0f * v);
    }
  }
  return d;
}

}  // namespace sinew::test
