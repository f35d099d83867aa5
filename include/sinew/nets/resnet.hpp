// sinew/nets/resnet.hpp: ResNet-18/34/50 and ResNeXt-50 32x4d as torchvision builds them (v1.5: a bottleneck
// strides in its 3x3 convolution), with the ImageNet stem (7x7 stride 2 + 3x3 max-pool) or the CIFAR stem (3x3
// stride 1, no pool). The input shape and the class count are template parameters. Tensors carry torchvision's
// state_dict names (conv1.weight, layer1.0.bn1.running_mean, layer2.0.downsample.0.weight, fc.bias).
//
// Parameter counts equal torchvision's (tests/nets/test_zoo.cpp): resnet18(num_classes=10) 11,181,642;
// resnet50(num_classes=10) 23,528,522; the CIFAR-stem ResNet-18 11,173,962; resnext50_32x4d() 25,028,904,
// resnext50_32x4d(num_classes=10) 23,000,394.
#pragma once

#include "sinew/layers.hpp"
#include "sinew/nets/sequential.hpp"

namespace sinew::nets {

/// torchvision's BasicBlock: two 3x3 convolutions; the shortcut projects when the shape changes. The block is
/// one module of its stage ("layer1.0."), its layers named as torchvision's (conv1, bn1, ..., downsample).
template <int C, int Stride = 1>
using BasicBlock = Module<"", Residual<Chain<Named<"conv1", Conv2d<C, 3, Stride, 1, false>>, Named<"bn1", BatchNorm2d>, ReLU,
                                             Named<"conv2", Conv2d<C, 3, 1, 1, false>>, Named<"bn2", BatchNorm2d>>,
                                       ProjectIfNeeded<C, Stride>>,
                          ReLU>;

/// torchvision's Bottleneck (expansion 4) with its groups and width_per_group: 1x1 reduce to
/// int(Planes * WidthPerGroup / 64) * Groups channels, 3x3 (strided) in Groups groups, 1x1 expand to 4 * Planes.
template <int Planes, int Stride, int Groups, int WidthPerGroup>
using GroupedBottleneck =
    Module<"", Residual<Chain<Named<"conv1", Conv2d<Planes * WidthPerGroup / 64 * Groups, 1, 1, 0, false>>,
                              Named<"bn1", BatchNorm2d>, ReLU,
                              Named<"conv2",
                                    Conv2d<Planes * WidthPerGroup / 64 * Groups, 3, Stride, 1, false, 1, Groups>>,
                              Named<"bn2", BatchNorm2d>, ReLU,
                              Named<"conv3", Conv2d<4 * Planes, 1, 1, 0, false>>, Named<"bn3", BatchNorm2d>>,
                        ProjectIfNeeded<4 * Planes, Stride>>,
           ReLU>;

/// torchvision's Bottleneck of ResNet-50 (groups 1, width 64): 1x1 reduce, 3x3 (strided), 1x1 expand.
template <int Width, int Stride = 1>
using Bottleneck = GroupedBottleneck<Width, Stride, 1, 64>;

/// ResNeXt-50 32x4d's bottleneck (groups 32, width_per_group 4): a 3x3 of 2 x Planes channels, Planes / 16 per group.
template <int Planes, int Stride = 1>
using ResNeXtBottleneck32x4d = GroupedBottleneck<Planes, Stride, 32, 4>;

/// The first layers: ImageNetStem (7x7/2 convolution, 3x3/2 max-pool) or CifarStem (3x3/1, no pool).
struct ImageNetStem {
  /// its layers
  using layers = Chain<Named<"conv1", Conv2d<64, 7, 2, 3, false>>, Named<"bn1", BatchNorm2d>, ReLU, MaxPool<3, 2, 1>>;
};
/// torchvision's resnet18 with conv1 replaced by a 3x3 stride-1 convolution and maxpool by nn.Identity.
struct CifarStem {
  /// its layers
  using layers = Chain<Named<"conv1", Conv2d<64, 3, 1, 1, false>>, Named<"bn1", BatchNorm2d>, ReLU>;
};

/// @cond detail (Doxygen cannot parse the pack expansion in stage::make)
namespace detail {
/// Block<C, Stride> repeated: the first block of a stage strides, the others keep the shape.
template <template <int, int> class Block, int C, int Stride, int Count>
struct stage {
  template <class... B>
  static auto expand(type_list<B...>) -> Chain<B...>;
  template <std::size_t... I>
  static auto make(std::index_sequence<I...>) -> Chain<Block<C, I == 0 ? Stride : 1>...>;
  using type = decltype(make(std::make_index_sequence<Count>{}));
};
template <template <int, int> class Block, int C, int Stride, int Count>
using stage_t = typename stage<Block, C, Stride, Count>::type;

template <class In, class Stem, int Classes, template <int, int> class Block, int N1, int N2, int N3, int N4>
using resnet = Sequential<In, typename Stem::layers,
                          Module<"layer1", stage_t<Block, 64, 1, N1>>, Module<"layer2", stage_t<Block, 128, 2, N2>>,
                          Module<"layer3", stage_t<Block, 256, 2, N3>>, Module<"layer4", stage_t<Block, 512, 2, N4>>,
                          GlobalAvgPool, Flatten, Named<"fc", Dense<Classes>>>;
}  // namespace detail
/// @endcond

template <class In = Input<3, 224, 224>, int Classes = 1000, class Stem = ImageNetStem>
using ResNet18 = detail::resnet<In, Stem, Classes, BasicBlock, 2, 2, 2, 2>;
template <class In = Input<3, 224, 224>, int Classes = 1000, class Stem = ImageNetStem>
using ResNet34 = detail::resnet<In, Stem, Classes, BasicBlock, 3, 4, 6, 3>;
template <class In = Input<3, 224, 224>, int Classes = 1000, class Stem = ImageNetStem>
using ResNet50 = detail::resnet<In, Stem, Classes, Bottleneck, 3, 4, 6, 3>;
/// torchvision's resnext50_32x4d: ResNet-50 with grouped 3x3 convolutions (groups 32, width_per_group 4).
template <class In = Input<3, 224, 224>, int Classes = 1000, class Stem = ImageNetStem>
using ResNeXt50_32x4d = detail::resnet<In, Stem, Classes, ResNeXtBottleneck32x4d, 3, 4, 6, 3>;

}  // namespace sinew::nets
