// sinew/tensor/shape.hpp: compile-time feature shapes.
//
// A network's activations have a runtime batch size and a compile-time feature shape (C, H, W).
// Fully connected activations are Shape<N, 1, 1>. Layers compute their output shape from their input
// shape in constant expressions, so a network whose layers do not fit fails to compile.
#pragma once

#include <cstddef>
#include <string>

namespace sinew {

/// The feature shape of one sample: channels, height, width (NCHW without N).
template <int C, int H, int W>
struct Shape {
  static_assert(C > 0 && H > 0 && W > 0, "Shape: every extent must be positive");
  /// C
  static constexpr int kChannels = C;
  /// H
  static constexpr int kHeight = H;
  /// W
  static constexpr int kWidth = W;
  static constexpr std::size_t kSize = std::size_t(C) * H * W;  ///< elements per sample
  static constexpr bool kIsFlat = (H == 1 && W == 1);           ///< a vector, as after Flatten or Dense
};

/// A vector of N features.
template <int N>
using Flat = Shape<N, 1, 1>;

template <class T>
inline constexpr bool is_shape_v = false;
template <int C, int H, int W>
inline constexpr bool is_shape_v<Shape<C, H, W>> = true;

/// Satisfied by Shape<C, H, W>.
template <class T>
concept FeatureShape = is_shape_v<T>;

/// "3x32x32": for messages and reports.
template <FeatureShape S>
inline std::string to_string() {
  return std::to_string(S::kChannels) + "x" + std::to_string(S::kHeight) + "x" + std::to_string(S::kWidth);
}

/// Output extent of a sliding window: floor((in + 2*pad - kernel) / stride) + 1.
constexpr int window_output(int in, int kernel, int stride, int pad) {
  return (in + 2 * pad - kernel) / stride + 1;
}

}  // namespace sinew
