// sinew/layers/conv2d.hpp: 2-D convolution with bias, as torch.nn.Conv2d (square kernel, groups = 1).
#pragma once

#include "sinew/layers/layer_spec.hpp"

namespace sinew {

/// This header's kind: what backends map to an op (backend/op_table.hpp).
namespace layer_kind {
struct conv2d {};
}  // namespace layer_kind

/// Conv2d<OutChannels, Kernel, Stride, Padding>: weights [OutChannels, InChannels, Kernel, Kernel], bias [OutChannels].
template <int OutChannels, int Kernel, int Stride = 1, int Padding = 0, bool Bias = true>
struct Conv2d {
  static_assert(OutChannels > 0, "Conv2d: the number of output channels must be positive");
  static_assert(Kernel > 0, "Conv2d: the kernel size must be positive");
  static_assert(Stride > 0, "Conv2d: the stride must be positive");
  static_assert(Padding >= 0, "Conv2d: the padding must not be negative");

  /// what reports, profiles and checkpoints call the layer kind
  static constexpr std::string_view kName = "conv2d";
  /// its row in the one layer-to-op table (backend/op_table.hpp)
  using kind = layer_kind::conv2d;
  /// the operator-profile kind its time is reported under (metrics/profile.hpp)
  static constexpr std::string_view kProfile = "convolution";
  /// OutChannels
  static constexpr int kOutChannels = OutChannels;
  /// Kernel: the square kernel's side
  static constexpr int kKernel = Kernel;
  /// Stride
  static constexpr int kStride = Stride;
  /// Padding: zeros added on every side
  static constexpr int kPadding = Padding;
  /// whether it has a bias
  static constexpr bool kHasBias = Bias;
  static constexpr bool kFusesActivation = true;  ///< an activation right after it may be fused

  /// The layer applied to an input of shape In (the contract is in layers/layer_spec.hpp).
  template <FeatureShape In>
  struct at {
    static_assert(Kernel <= In::kHeight + 2 * Padding && Kernel <= In::kWidth + 2 * Padding,
                  "Conv2d: the kernel is larger than the padded input image; use a smaller kernel, more padding, or "
                  "fewer pooling layers before it");
    /// whether the kernel fits the padded input (else the static_assert above has stopped the build)
    static constexpr bool kFits = Kernel <= In::kHeight + 2 * Padding && Kernel <= In::kWidth + 2 * Padding;
    /// the shape of the output for one sample
    using output = Shape<OutChannels, kFits ? window_output(In::kHeight, Kernel, Stride, Padding) : 1,
                         kFits ? window_output(In::kWidth, Kernel, Stride, Padding) : 1>;
    /// inputs per output: InChannels x Kernel x Kernel
    static constexpr std::size_t kFanIn = std::size_t(In::kChannels) * Kernel * Kernel;
    /// trainable weights (floats) at this input
    static constexpr std::size_t kWeights = std::size_t(OutChannels) * kFanIn;
    /// trainable biases (floats); 0 without bias
    static constexpr std::size_t kBias = Bias ? OutChannels : 0;
    /// multiply-adds per sample: every output value takes kFanIn of them
    static constexpr double kMacs = double(output::kChannels) * output::kHeight * output::kWidth * kFanIn;
    /// PyTorch's weight [out, in, k, k] and, with Bias, bias [out].
    static constexpr auto kStateDict = [] {
      constexpr StateTensor weight{"weight", StateSource::weights, 0, 4, {OutChannels, In::kChannels, Kernel, Kernel}};
      if constexpr (Bias)
        return std::array{weight, StateTensor{"bias", StateSource::bias, 0, 1, {OutChannels}}};
      else
        return std::array{weight};
    }();

    /// PyTorch's default initialisation: weights and bias uniform in +-1 / sqrt(kFanIn).
    static void init(std::span<float> weights, std::span<float> bias, Rng& rng) {
      detail::init_fan_in_uniform(weights, bias, kFanIn, rng);
    }
  };
};

}  // namespace sinew
