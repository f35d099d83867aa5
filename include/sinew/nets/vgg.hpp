// sinew/nets/vgg.hpp: VGG-16 and VGG-16-BN in torchvision's layout (configuration "D"; 7x7 adaptive average
// pool; classifier with dropout). vgg16_bn(num_classes=10) has 134,309,962 parameters. Tensors carry
// torchvision's state_dict names (features.0.weight, features.1.running_var for VGG-16-BN, classifier.6.bias).
#pragma once

#include "sinew/layers.hpp"
#include "sinew/nets/sequential.hpp"

namespace sinew::nets {

namespace detail {
/// A 3x3 convolution with C outputs, then ReLU (with BatchNorm2d between them for VGG-BN).
template <int C, bool BatchNorm>
using vgg_conv = std::conditional_t<BatchNorm, Chain<Conv2d<C, 3, 1, 1>, BatchNorm2d, ReLU>, Chain<Conv2d<C, 3, 1, 1>, ReLU>>;

template <class In, int Classes, bool BN, int DropoutPercent>
using vgg16 = Sequential<In,
                         Module<"features",
                                vgg_conv<64, BN>, vgg_conv<64, BN>, MaxPool<2>,
                                vgg_conv<128, BN>, vgg_conv<128, BN>, MaxPool<2>,
                                vgg_conv<256, BN>, vgg_conv<256, BN>, vgg_conv<256, BN>, MaxPool<2>,
                                vgg_conv<512, BN>, vgg_conv<512, BN>, vgg_conv<512, BN>, MaxPool<2>,
                                vgg_conv<512, BN>, vgg_conv<512, BN>, vgg_conv<512, BN>, MaxPool<2>>,
                         AdaptiveAvgPool<7, 7>, Flatten,
                         Module<"classifier",
                                Dense<4096>, ReLU, Dropout<DropoutPercent>,
                                Dense<4096>, ReLU, Dropout<DropoutPercent>,
                                Dense<Classes>>>;
}  // namespace detail

/// DropoutPercent is torchvision's `dropout` argument (0.5 by default) as a percentage.
template <class In = Input<3, 224, 224>, int Classes = 1000, int DropoutPercent = 50>
using VGG16 = detail::vgg16<In, Classes, false, DropoutPercent>;
template <class In = Input<3, 224, 224>, int Classes = 1000, int DropoutPercent = 50>
using VGG16BN = detail::vgg16<In, Classes, true, DropoutPercent>;

}  // namespace sinew::nets
