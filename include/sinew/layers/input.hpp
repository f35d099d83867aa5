// sinew/layers/input.hpp: the first element of a Sequential, naming the feature shape of one sample.
#pragma once

#include "sinew/tensor/shape.hpp"

namespace sinew {

/// Input<C, H, W>: the network takes batches of C x H x W samples.
template <int C, int H, int W>
struct Input {
  /// Shape<C, H, W>
  using shape = Shape<C, H, W>;
};

template <class T>
inline constexpr bool is_input_v = false;
template <int C, int H, int W>
inline constexpr bool is_input_v<Input<C, H, W>> = true;

}  // namespace sinew
