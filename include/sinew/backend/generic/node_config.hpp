// sinew/backend/generic/node_config.hpp: what every backend reads off a lowered node before creating its
// kernels, as runtime values. Ops take these (not the node type), so each op compiles once per backend
// rather than once per layer shape.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>

#include "sinew/backend/simd/activation_kind.hpp"
#include "sinew/core/error.hpp"
#include "sinew/layers/activation.hpp"
#include "sinew/layers/layer_spec.hpp"

namespace sinew::backend {

/// The element-wise activation kernel of an activation layer type (none for NoActivation).
template <class Act>
constexpr simd::activation activation_of() {
  if constexpr (std::is_same_v<Act, NoActivation>) {
    return simd::activation::none;
  } else {
    static_assert(simd::kernel_of<Act> != simd::activation::none,
                  "this activation has no element-wise kernel: add one to backend/simd/activation.hpp and name it "
                  "with simd::kernel_of<Act> there (every backend computes activations with those kernels)");
    return simd::kernel_of<Act>;
  }
}

/// A Conv2d node (with its fused activation) at a batch size. Dilation and groups come last, with PyTorch's
/// defaults, so that a configuration written without them is an ungrouped, undilated convolution.
struct Conv2dConfig {
  int batch, in_c, in_h, in_w, out_c, out_h, out_w, kernel, stride, padding;
  bool bias;
  simd::activation act;
  int dilation = 1;  ///< pixels between taps
  int groups = 1;    ///< channel groups: in_c and out_c are multiples of it
  /// Whether it is the plain convolution (one group, adjacent taps), the only form the special kernels compute.
  constexpr bool is_dense() const noexcept { return dilation == 1 && groups == 1; }
  /// Whether it is depthwise with one output per channel (groups == in_c == out_c).
  constexpr bool is_depthwise() const noexcept { return groups > 1 && groups == in_c && out_c == in_c; }
  /// The pixels a window covers along each side.
  constexpr int span() const noexcept { return dilation * (kernel - 1) + 1; }
  /// Throws backend_error unless is_dense(): for the kernels of the plain form, which `op` names, given a grouped
  /// or dilated convolution directly (the op tables route those elsewhere, as `route` says).
  void require_dense(std::string_view op, std::string_view route) const {
    if (!is_dense())
      throw backend_error(std::string(op) + ": " + std::to_string(groups) + " groups, dilation " +
                          std::to_string(dilation) + " given; it computes ungrouped, undilated convolutions only (" +
                          std::string(route) + ")");
  }
};

template <NodeType N>
constexpr Conv2dConfig conv2d_config(int batch) {
  using L = typename N::layer;
  using In = typename N::input;
  using Out = typename N::output;
  return {batch,        In::kChannels, In::kHeight,  In::kWidth,  Out::kChannels, Out::kHeight, Out::kWidth,
          L::kKernel,   L::kStride,    L::kPadding, L::kHasBias, activation_of<typename N::activation>(),
          L::kDilation, L::kGroups};
}

/// A BatchNorm2d node (with its fused activation) at a batch size.
struct BatchNormConfig {
  int batch, channels, h, w;
  float eps;
  simd::activation act;
  /// The values each channel's batch statistics average: batch x height x width.
  std::size_t per_channel() const noexcept { return std::size_t(batch) * std::size_t(h) * std::size_t(w); }
};

template <NodeType N>
constexpr BatchNormConfig batch_norm_config(int batch) {
  using In = typename N::input;
  return {batch, In::kChannels, In::kHeight, In::kWidth, N::layer::kEps, activation_of<typename N::activation>()};
}

/// An AdaptiveAvgPool or GlobalAvgPool node at a batch size.
struct AdaptivePoolConfig {
  int batch, channels, in_h, in_w, out_h, out_w;
};

template <NodeType N>
constexpr AdaptivePoolConfig adaptive_pool_config(int batch) {
  using In = typename N::input;
  return {batch, In::kChannels, In::kHeight, In::kWidth, N::layer::kOutHeight, N::layer::kOutWidth};
}

}  // namespace sinew::backend
