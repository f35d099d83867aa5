// The model zoo: parameter counts equal torchvision's (checked at compile time) and shapes as torchvision's on
// the seeds' inputs. Their multiply-add counts are tested in tests/metrics/test_flops.cpp. Each net's forward and backward pass on OneDnn is compared with torchvision's in
// test_resnet.cpp and test_lenet5_alexnet_vgg.cpp (one translation unit per Model, for compile time).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "sinew/nets.hpp"

namespace {
using namespace sinew;
using namespace sinew::nets;

using Cifar = Input<3, 32, 32>;
using ResNet18In = ResNet18<Cifar, 10>;
using ResNet18Cifar = ResNet18<Cifar, 10, CifarStem>;
using ResNet34In = ResNet34<Cifar, 10>;
using ResNet50In = ResNet50<Cifar, 10>;
using AlexNet64 = AlexNet<Input<3, 64, 64>, 10>;
using VGG16BNIn = VGG16BN<Cifar, 10>;
using MobileNetV2In = MobileNetV2<Cifar, 10>;
using ResNeXt50In = ResNeXt50_32x4d<Cifar, 10>;

// torchvision's counts (sum(p.numel() for p in model.parameters()) with num_classes=10).
static_assert(ResNet18In::kParams == 11181642);
static_assert(ResNet18Cifar::kParams == 11173962);
static_assert(ResNet34In::kParams == 21289802);
static_assert(ResNet50In::kParams == 23528522);
static_assert(AlexNet64::kParams == 57044810);
static_assert(VGG16BNIn::kParams == 134309962);
static_assert(VGG16<Cifar, 10>::kParams == 134301514);
static_assert(nets::LeNet5<Cifar>::kParams == 62006);
static_assert(MobileNetV2In::kParams == 2236682);
static_assert(ResNeXt50In::kParams == 23000394);
// ...and at torchvision's defaults (1000 classes, 224 x 224), the figures its documentation gives.
static_assert(MobileNetV2<>::kParams == 3504872);
static_assert(ResNeXt50_32x4d<>::kParams == 25028904);

// Running statistics: two per BatchNorm channel.
static_assert(ResNet18In::kBuffers == 2 * (64 + 4 * 64 + 4 * 128 + 128 + 4 * 256 + 256 + 4 * 512 + 512));

// Shapes: ResNet-18's ImageNet stem on 32x32 leaves 512 x 1 x 1 before pooling; AlexNet's features end at 1x1.
static_assert(std::is_same_v<ResNet18In::output_shape, Flat<10>>);
static_assert(std::is_same_v<MaxPool<3, 2>::at<Shape<256, 3, 3>>::output, Shape<256, 1, 1>>);
// MobileNetV2 strides by 32 in all: 1280 x 1 x 1 from 32 x 32 before pooling, 1280 x 7 x 7 from 224 x 224.
static_assert(std::is_same_v<MobileNetV2In::output_shape, Flat<10>>);
static_assert(std::is_same_v<ResNeXt50In::output_shape, Flat<10>>);
// An inverted residual adds its input only where it keeps the shape (stride 1, as many channels out as in).
static_assert(std::is_same_v<InvertedResidual<24, 24, 1, 6>::type, Module<"", Residual<Chain<InvertedResidual<24, 24, 1, 6>::conv>>>>);
static_assert(std::is_same_v<InvertedResidual<24, 32, 1, 6>::type, Module<"", InvertedResidual<24, 32, 1, 6>::conv>>);
static_assert(std::is_same_v<InvertedResidual<32, 32, 2, 6>::type, Module<"", InvertedResidual<32, 32, 2, 6>::conv>>);

TEST(zoo, parameter_counts_equal_torchvision) {
  EXPECT_EQ(ResNet18In::kParams, 11181642u);
  EXPECT_EQ(ResNet50In::kParams, 23528522u);
  EXPECT_EQ(AlexNet64::kParams, 57044810u);
  EXPECT_EQ(VGG16BNIn::kParams, 134309962u);
  EXPECT_EQ(ResNet18Cifar::kParams, 11173962u);
  EXPECT_EQ(MobileNetV2In::kParams, 2236682u);
  EXPECT_EQ(ResNeXt50In::kParams, 23000394u);
}

// torchvision's state_dict keys and shapes at the default 1000 classes (the golden files check every key at 10).
TEST(zoo, mobilenet_v2_and_resnext50_keys_equal_torchvision) {
  const auto& m = state_dict_entries<MobileNetV2<>>();
  ASSERT_EQ(m.size(), 314u);
  EXPECT_EQ(m[0].key, "features.0.0.weight");
  EXPECT_EQ(m[6].key, "features.1.conv.0.0.weight");                         // t = 1: no expansion
  EXPECT_EQ(m[6].shape(), (std::vector<std::int64_t>{32, 1, 3, 3}));          // depthwise
  EXPECT_EQ(m[12].key, "features.1.conv.1.weight");
  EXPECT_EQ(m[24].key, "features.2.conv.1.0.weight");                        // t = 6: expansion first
  EXPECT_EQ(m[24].shape(), (std::vector<std::int64_t>{96, 1, 3, 3}));
  EXPECT_EQ(m[m.size() - 1].key, "classifier.1.bias");
  EXPECT_EQ(m[m.size() - 2].shape(), (std::vector<std::int64_t>{1000, 1280}));
  const auto& x = state_dict_entries<ResNeXt50_32x4d<>>();
  const auto conv2 = std::find_if(x.begin(), x.end(), [](const StateEntry& e) { return e.key == "layer1.0.conv2.weight"; });
  ASSERT_NE(conv2, x.end());
  EXPECT_EQ(conv2->shape(), (std::vector<std::int64_t>{128, 4, 3, 3}));  // 32 groups of 4 input channels
  const auto last = std::find_if(x.begin(), x.end(), [](const StateEntry& e) { return e.key == "layer4.2.conv2.weight"; });
  ASSERT_NE(last, x.end());
  EXPECT_EQ(last->shape(), (std::vector<std::int64_t>{1024, 32, 3, 3}));
}

}  // namespace
