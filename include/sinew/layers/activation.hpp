// sinew/layers/activation.hpp: element-wise activations ReLU, Tanh and Sigmoid.
//
// Each keeps its input's shape and has no parameters. Placed right after a Conv2d or Dense, a backend may
// fuse it into that layer (oneDNN post-op); the backward pass then differentiates through its output.
#pragma once

#include "sinew/layers/layer_spec.hpp"

namespace sinew {

namespace detail {
template <class Self>
struct elementwise {
  template <FeatureShape In>
  struct at {
    using output = In;
    static constexpr std::size_t kWeights = 0;
    static constexpr std::size_t kBias = 0;
  };
};
}  // namespace detail

/// max(x, 0)
struct ReLU : detail::elementwise<ReLU> {
  /// what reports, profiles and checkpoints call the layer kind
  static constexpr std::string_view kName = "relu";
};
/// tanh(x)
struct Tanh : detail::elementwise<Tanh> {
  /// what reports, profiles and checkpoints call the layer kind
  static constexpr std::string_view kName = "tanh";
};
/// 1 / (1 + exp(-x))
struct Sigmoid : detail::elementwise<Sigmoid> {
  /// what reports, profiles and checkpoints call the layer kind
  static constexpr std::string_view kName = "sigmoid";
};

template <>
inline constexpr bool is_activation_v<ReLU> = true;
template <>
inline constexpr bool is_activation_v<Tanh> = true;
template <>
inline constexpr bool is_activation_v<Sigmoid> = true;

/// Satisfied by ReLU, Tanh and Sigmoid.
template <class T>
concept Activation = is_activation_v<T>;

}  // namespace sinew
