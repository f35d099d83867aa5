// sinew/data/resize.hpp: bilinear resizing of uint8 CHW images, as torchvision's Resize without antialias.
//
// torchvision.transforms.functional.resize(uint8 tensor, size, BILINEAR, antialias=False) converts to float,
// calls interpolate(mode="bilinear", align_corners=False) and rounds back to uint8 (half to even). This does
// the same arithmetic (PyTorch's CPU upsample_bilinear2d): output pixel (y, x) samples the input at
// src = max((y + 0.5) * in / out - 0.5, 0), from its two neighbours on each axis with weights (1 - frac, frac),
// the far neighbour clamped at the border. PyTorch's kernel orders its float operations its own way, so results
// agree to a few ulps, and the bytes wherever the value is not within an ulp or two of a rounding tie:
// test_resize.cpp checks both against torchvision's outputs in tests/reference/golden/resize_bilinear.txt.
// Antialiasing matters only when shrinking; sinew resizes to grow (CIFAR 32x32 to AlexNet's 64x64).
#pragma once

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sinew/core/error.hpp"

namespace sinew::data {

namespace detail {

/// One output coordinate's two source indices and weights.
struct bilinear_tap {
  int first = 0, second = 0;
  float first_weight = 1, second_weight = 0;
};

inline std::vector<bilinear_tap> bilinear_taps(int in, int out) {
  std::vector<bilinear_tap> taps(static_cast<std::size_t>(out));
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  for (int o = 0; o < out; ++o) {
    const float src = std::max(scale * (static_cast<float>(o) + 0.5f) - 0.5f, 0.0f);
    const int i0 = static_cast<int>(src);
    bilinear_tap& t = taps[static_cast<std::size_t>(o)];
    t.first = i0;
    t.second = i0 + (i0 < in - 1 ? 1 : 0);
    t.second_weight = src - static_cast<float>(i0);
    t.first_weight = 1.0f - t.second_weight;
  }
  return taps;
}

}  // namespace detail

/// Writes `in` (channels x in_height x in_width) resized to channels x out_height x out_width into `out`,
/// each value rounded half to even and clamped to a byte, as torchvision does for uint8 images.
/// Out is a float* for the unrounded values (what interpolate() gives for a float image).
template <class Out>
  requires std::same_as<Out, std::uint8_t> || std::same_as<Out, float>
void resize_bilinear(const std::uint8_t* in, int channels, int in_height, int in_width, Out* out, int out_height,
                     int out_width) {
  if (channels <= 0 || in_height <= 0 || in_width <= 0 || out_height <= 0 || out_width <= 0)
    throw data_error("resize: cannot resize " + std::to_string(channels) + "x" + std::to_string(in_height) + "x" +
                     std::to_string(in_width) + " to " + std::to_string(out_height) + "x" +
                     std::to_string(out_width) + " (every size must be positive)");
  const auto rows = detail::bilinear_taps(in_height, out_height), cols = detail::bilinear_taps(in_width, out_width);
  const std::size_t in_plane = static_cast<std::size_t>(in_height) * static_cast<std::size_t>(in_width);
  for (int c = 0; c < channels; ++c) {
    const std::uint8_t* plane = in + static_cast<std::size_t>(c) * in_plane;
    for (const detail::bilinear_tap& r : rows) {
      const std::uint8_t* row0 = plane + static_cast<std::size_t>(r.first) * static_cast<std::size_t>(in_width);
      const std::uint8_t* row1 = plane + static_cast<std::size_t>(r.second) * static_cast<std::size_t>(in_width);
      for (const detail::bilinear_tap& k : cols) {
        const float top = k.first_weight * static_cast<float>(row0[k.first]) +
                          k.second_weight * static_cast<float>(row0[k.second]);
        const float bottom = k.first_weight * static_cast<float>(row1[k.first]) +
                             k.second_weight * static_cast<float>(row1[k.second]);
        const float value = r.first_weight * top + r.second_weight * bottom;
        if constexpr (std::same_as<Out, float>)
          *out++ = value;
        else
          *out++ = static_cast<std::uint8_t>(std::clamp(std::nearbyint(value), 0.0f, 255.0f));
      }
    }
  }
}

}  // namespace sinew::data
