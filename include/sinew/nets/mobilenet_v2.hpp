// sinew/nets/mobilenet_v2.hpp: MobileNetV2 as torchvision's mobilenet_v2 builds it (width 1.0): a 3x3 stride-2
// stem, seventeen inverted residual blocks (1x1 expansion by t, 3x3 depthwise, 1x1 linear projection, each
// convolution followed by BatchNorm2d and the first two by ReLU6; the shortcut only where the block keeps its
// shape), a 1x1 convolution to 1280 channels, global average pooling and a dropout + Linear classifier. The input
// shape and the class count are template parameters. Tensors carry torchvision's state_dict names
// (features.0.0.weight, features.2.conv.1.0.weight for a depthwise convolution, classifier.1.bias).
//
// Parameter counts equal torchvision's (tests/nets/test_zoo.cpp): mobilenet_v2() 3,504,872,
// mobilenet_v2(num_classes=10) 2,236,682.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "sinew/layers.hpp"
#include "sinew/nets/sequential.hpp"

namespace sinew::nets {

/// torchvision's Conv2dNormActivation with ReLU6: a convolution without bias (padding (K - 1) / 2), BatchNorm2d,
/// ReLU6; one module ("features.0.").
template <int C, int K, int Stride = 1>
using ConvBNReLU6 = Module<"", Conv2d<C, K, Stride, (K - 1) / 2, false>, BatchNorm2d, ReLU6>;

/// torchvision's InvertedResidual from In to Out channels: a 1x1 expansion to In x Expand channels (absent when
/// Expand is 1), a 3x3 depthwise convolution that strides, a 1x1 projection to Out with BatchNorm2d and no
/// activation (linear bottleneck); the input is added only where Stride is 1 and In equals Out. Its layers form
/// the block's submodule "conv", numbered as torchvision's (conv.0.0 the expansion, conv.1.0 the depthwise one).
template <int In, int Out, int Stride, int Expand>
struct InvertedResidual {
  static_assert(Stride == 1 || Stride == 2, "InvertedResidual: torchvision's blocks stride by 1 or 2");
  static_assert(Expand >= 1, "InvertedResidual: the expand ratio t is at least 1");
  static constexpr int kHidden = In * Expand;  ///< int(round(inp * expand_ratio)) for integer t
  /// the depthwise convolution, its batch norm and ReLU6
  using depthwise = Module<"", DepthwiseConv2d<kHidden, 3, Stride, 1>, BatchNorm2d, ReLU6>;
  /// the linear projection
  using project = Chain<Conv2d<Out, 1, 1, 0, false>, BatchNorm2d>;
  /// torchvision's self.conv
  using conv = std::conditional_t<Expand == 1, Module<"conv", depthwise, project>,
                                  Module<"conv", ConvBNReLU6<kHidden, 1>, depthwise, project>>;
  /// the block as one module of features
  using type = std::conditional_t<Stride == 1 && In == Out, Module<"", Residual<Chain<conv>>>, Module<"", conv>>;
};

/// @cond detail (Doxygen cannot parse the pack expansion in inverted_stage::make)
namespace detail {
/// One row (t, c, n, s) of torchvision's inverted_residual_setting, from In channels: n blocks, the first strides
/// by s and changes the channels, the others keep both.
template <int In, int Expand, int C, int N, int Stride>
struct inverted_stage {
  template <std::size_t... I>
  static auto make(std::index_sequence<I...>)
      -> Chain<typename InvertedResidual<I == 0 ? In : C, C, I == 0 ? Stride : 1, Expand>::type...>;
  using type = decltype(make(std::make_index_sequence<N>{}));
};
template <int In, int Expand, int C, int N, int Stride>
using inverted_stage_t = typename inverted_stage<In, Expand, C, N, Stride>::type;
}  // namespace detail
/// @endcond

/// torchvision's mobilenet_v2 (width_mult 1.0). DropoutPercent is the classifier's dropout (0.2 by default)
/// as a percentage.
template <class In = Input<3, 224, 224>, int Classes = 1000, int DropoutPercent = 20>
using MobileNetV2 = Sequential<In,
                               Module<"features",
                                      ConvBNReLU6<32, 3, 2>,
                                      //                         in, t,   c, n, s
                                      detail::inverted_stage_t<  32, 1,  16, 1, 1>,
                                      detail::inverted_stage_t<  16, 6,  24, 2, 2>,
                                      detail::inverted_stage_t<  24, 6,  32, 3, 2>,
                                      detail::inverted_stage_t<  32, 6,  64, 4, 2>,
                                      detail::inverted_stage_t<  64, 6,  96, 3, 1>,
                                      detail::inverted_stage_t<  96, 6, 160, 3, 2>,
                                      detail::inverted_stage_t< 160, 6, 320, 1, 1>,
                                      ConvBNReLU6<1280, 1>>,
                               GlobalAvgPool, Flatten,
                               Module<"classifier", Dropout<DropoutPercent>, Dense<Classes>>>;

}  // namespace sinew::nets
