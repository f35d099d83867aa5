// sinew/nets/vgg.hpp: VGG-16 and VGG-16-BN in torchvision's layout (configuration "D"; 7x7 adaptive average
// pool; classifier with dropout). vgg16_bn(num_classes=10) has 134,309,962 parameters.
#pragma once

#include "sinew/layers.hpp"
#include "sinew/nets/sequential.hpp"

namespace sinew::nets {

namespace detail {
/// A 3x3 convolution with C outputs, then ReLU (with BatchNorm2d between them for VGG-BN).
template <int C, bool BatchNorm>
using vgg_conv = std::conditional_t<BatchNorm, Chain<Conv2d<C, 3, 1, 1>, BatchNorm2d, ReLU>, Chain<Conv2d<C, 3, 1, 1>, ReLU>>;

template <class In, int Classes, bool BN>
using vgg16 = Sequential<In,
                         vgg_conv<64, BN>, vgg_conv<64, BN>, MaxPool<2>,
                         vgg_conv<128, BN>, vgg_conv<128, BN>, MaxPool<2>,
                         vgg_conv<256, BN>, vgg_conv<256, BN>, vgg_conv<256, BN>, MaxPool<2>,
                         vgg_conv<512, BN>, vgg_conv<512, BN>, vgg_conv<512, BN>, MaxPool<2>,
                         vgg_conv<512, BN>, vgg_conv<512, BN>, vgg_conv<512, BN>, MaxPool<2>,
                         AdaptiveAvgPool<7, 7>, Flatten,
                         Dense<4096>, ReLU, Dropout<50>,
                         Dense<4096>, ReLU, Dropout<50>,
                         Dense<Classes>>;
}  // namespace detail

template <class In = Input<3, 224, 224>, int Classes = 1000>
using VGG16 = detail::vgg16<In, Classes, false>;
template <class In = Input<3, 224, 224>, int Classes = 1000>
using VGG16BN = detail::vgg16<In, Classes, true>;

}  // namespace sinew::nets
