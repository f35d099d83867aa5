// sinew/layers/activation.hpp: element-wise activations ReLU, ReLU6, LeakyReLU, Tanh and Sigmoid.
//
// Each keeps its input's shape and has no parameters. Placed right after a Conv2d or Dense, a backend may
// fuse it into that layer (oneDNN post-op); the backward pass then differentiates through its output.
// Every backend computes them with the element-wise kernels of backend/simd/activation.hpp (one kernel per
// activation, kernel_of<Act> there), so a new activation is its spec here, its entry in `activations` below,
// and its kernel.
#pragma once

#include "sinew/core/type_list.hpp"
#include "sinew/layers/layer_spec.hpp"

namespace sinew {

/// This header's kind, what backends map to an op (backend/op_table.hpp): every activation below, one op
/// whose element-wise kernel is simd::kernel_of<Act>.
namespace layer_kind {
struct activation {};
}  // namespace layer_kind

namespace detail {
template <class Self>
struct elementwise {
  /// its row in the one layer-to-op table (backend/op_table.hpp)
  using kind = layer_kind::activation;
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
  /// the operator-profile kind its time is reported under (metrics/profile.hpp)
  static constexpr std::string_view kProfile = "relu";
};
/// tanh(x)
struct Tanh : detail::elementwise<Tanh> {
  /// what reports, profiles and checkpoints call the layer kind
  static constexpr std::string_view kName = "tanh";
  /// the operator-profile kind its time is reported under (metrics/profile.hpp)
  static constexpr std::string_view kProfile = "tanh";
};
/// 1 / (1 + exp(-x))
struct Sigmoid : detail::elementwise<Sigmoid> {
  /// what reports, profiles and checkpoints call the layer kind
  static constexpr std::string_view kName = "sigmoid";
  /// the operator-profile kind its time is reported under (metrics/profile.hpp)
  static constexpr std::string_view kProfile = "sigmoid";
};

/// max(x, 0) + 0.01 min(x, 0): torch.nn.LeakyReLU() with PyTorch's default negative slope. Its time is
/// profiled with the rectifiers, as "relu".
struct LeakyReLU : detail::elementwise<LeakyReLU> {
  /// what reports, profiles and checkpoints call the layer kind
  static constexpr std::string_view kName = "leaky_relu";
  /// the operator-profile kind its time is reported under (metrics/profile.hpp)
  static constexpr std::string_view kProfile = "relu";
  static constexpr float kNegativeSlope = 0.01f;  ///< in (0, 1): the sign of the output is the input's
};

/// min(max(x, 0), 6): torch.nn.ReLU6, MobileNetV2's activation. Its time is profiled with the rectifiers, as
/// "relu". Its derivative is 1 strictly between the kinks at 0 and 6, and 0 elsewhere (PyTorch's too).
struct ReLU6 : detail::elementwise<ReLU6> {
  /// what reports, profiles and checkpoints call the layer kind
  static constexpr std::string_view kName = "relu6";
  /// the operator-profile kind its time is reported under (metrics/profile.hpp)
  static constexpr std::string_view kProfile = "relu";
  static constexpr float kCeiling = 6.0f;  ///< where the output stops growing
};

/// Every activation, for what maps a kernel back to its layer (the profile kind of a fused activation).
using activations = type_list<ReLU, Tanh, Sigmoid, LeakyReLU, ReLU6>;

/// Satisfied by the activations (their kind is layer_kind::activation).
template <class T>
concept ActivationPolicy = is_activation_v<T>;

}  // namespace sinew
