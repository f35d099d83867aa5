// sinew/layers/conv2d.hpp: 2-D convolution with bias, as torch.nn.Conv2d (square kernel, any stride, padding,
// dilation and groups), and DepthwiseConv2d, its one-group-per-channel form (MobileNet's).
//
// Groups split the channels as PyTorch's `groups` does: output channel o reads only the In/Groups input channels
// of its group (o / (Out/Groups)), so the weights are [Out, In/Groups, K, K] and each output takes In/Groups*K*K
// inputs (the fan-in of PyTorch's initialisation). Dilation spaces the kernel's taps Dilation pixels apart, so
// the kernel covers Dilation*(K-1)+1 pixels. Backends pick a kernel per form: the depthwise form (Groups equal to
// the input's channels) has kernels of its own, as TensorFlow's DepthwiseConv2D has, since a product per channel
// of one multiply-add per tap leaves a matrix kernel idle.
#pragma once

#include "sinew/layers/layer_spec.hpp"

namespace sinew {

/// This header's kind: what backends map to an op (backend/op_table.hpp).
namespace layer_kind {
struct conv2d {};
}  // namespace layer_kind

/// Conv2d<OutChannels, Kernel, Stride, Padding, Bias, Dilation, Groups>: weights [OutChannels, InChannels / Groups,
/// Kernel, Kernel], bias [OutChannels].
template <int OutChannels,  ///< output channels
          int Kernel,       ///< the square kernel's side, in taps
          int Stride = 1,   ///< pixels between windows
          int Padding = 0,  ///< zeros added on every side
          bool Bias = true,  ///< whether it has a bias
          int Dilation = 1,  ///< pixels between a window's taps (1: adjacent)
          int Groups = 1>    ///< channel groups (PyTorch's `groups`): each output channel reads In/Groups inputs
struct Conv2d {
  static_assert(OutChannels > 0, "Conv2d: the number of output channels must be positive");
  static_assert(Kernel > 0, "Conv2d: the kernel size must be positive");
  static_assert(Stride > 0, "Conv2d: the stride must be positive");
  static_assert(Padding >= 0, "Conv2d: the padding must not be negative");
  static_assert(Dilation >= 1, "Conv2d: the dilation must be at least 1 (1 means adjacent taps, PyTorch's default)");
  static_assert(Groups >= 1, "Conv2d: the number of groups must be at least 1");
  static_assert(OutChannels % Groups == 0,
                "Conv2d: the output channels are not divisible by Groups; each group must produce the same number of "
                "channels (PyTorch's rule): choose OutChannels a multiple of Groups");

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
  /// Dilation: pixels between taps
  static constexpr int kDilation = Dilation;
  /// Groups
  static constexpr int kGroups = Groups;
  /// the pixels one window covers along each side: Dilation * (Kernel - 1) + 1
  static constexpr int kSpan = Dilation * (Kernel - 1) + 1;
  static constexpr bool kFusesActivation = true;  ///< an activation right after it may be fused

  /// The layer applied to an input of shape In (the contract is in layers/layer_spec.hpp).
  template <FeatureShape In>
  struct at {
    static_assert(In::kChannels % Groups == 0,
                  "Conv2d: the input channels are not divisible by Groups; each group must read the same number of "
                  "channels (PyTorch's rule): choose Groups a divisor of the channels the layer before gives");
    static_assert(kSpan <= In::kHeight + 2 * Padding && kSpan <= In::kWidth + 2 * Padding,
                  "Conv2d: the kernel is larger than the padded input image (a dilated kernel covers Dilation * "
                  "(Kernel - 1) + 1 pixels); use a smaller kernel or dilation, more padding, or fewer pooling layers "
                  "before it");
    /// whether the kernel fits the padded input (else the static_assert above has stopped the build)
    static constexpr bool kFits = kSpan <= In::kHeight + 2 * Padding && kSpan <= In::kWidth + 2 * Padding;
    /// the shape of the output for one sample
    using output = Shape<OutChannels, kFits ? window_output(In::kHeight, kSpan, Stride, Padding) : 1,
                         kFits ? window_output(In::kWidth, kSpan, Stride, Padding) : 1>;
    /// input channels each output channel reads: InChannels / Groups
    static constexpr int kGroupChannels = In::kChannels / Groups;
    /// inputs per output: InChannels / Groups x Kernel x Kernel
    static constexpr std::size_t kFanIn = std::size_t(kGroupChannels) * Kernel * Kernel;
    /// trainable weights (floats) at this input
    static constexpr std::size_t kWeights = std::size_t(OutChannels) * kFanIn;
    /// trainable biases (floats); 0 without bias
    static constexpr std::size_t kBias = Bias ? OutChannels : 0;
    /// multiply-adds per sample: every output value takes kFanIn of them
    static constexpr double kMacs = double(output::kChannels) * output::kHeight * output::kWidth * kFanIn;
    /// PyTorch's weight [out, in / groups, k, k] and, with Bias, bias [out].
    static constexpr auto kStateDict = [] {
      constexpr StateTensor weight{"weight", StateSource::weights, 0, 4, {OutChannels, kGroupChannels, Kernel, Kernel}};
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

namespace detail {
/// DepthwiseConv2d's own check, a base listed before Conv2d's at<In> so that its sentence comes first.
template <int Channels, FeatureShape In>
struct depthwise_fits {
  static_assert(In::kChannels == Channels,
                "DepthwiseConv2d: the input's channels differ from the layer's Channels; a depthwise convolution keeps "
                "the channels (one group per channel): set Channels to the channels the layer before gives, or use "
                "Conv2d<Out, K, Stride, Padding, Bias, 1, Groups> for a grouped one");
};
}  // namespace detail

/// DepthwiseConv2d<Channels, Kernel, Stride, Padding, Bias>: one group per channel, as MobileNet's 3x3 layers
/// (PyTorch: Conv2d(C, C, K, groups=C, bias=False)); weights [Channels, 1, Kernel, Kernel]. It is
/// Conv2d<Channels, Kernel, Stride, Padding, Bias, 1, Channels> (the same kind, op and state_dict) that also
/// checks that its input has Channels channels.
template <int Channels, int Kernel, int Stride = 1, int Padding = 0, bool Bias = false>
struct DepthwiseConv2d : Conv2d<Channels, Kernel, Stride, Padding, Bias, 1, Channels> {
  /// The layer at input In: Conv2d's, after the check that In has Channels channels.
  template <FeatureShape In>
  struct at : detail::depthwise_fits<Channels, In>,
              Conv2d<Channels, Kernel, Stride, Padding, Bias, 1, Channels>::template at<In> {};
};

}  // namespace sinew
