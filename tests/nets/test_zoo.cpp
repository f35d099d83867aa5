// The model zoo: parameter counts equal torchvision's (checked at compile time) and shapes as torchvision's on
// the seeds' inputs. Their multiply-add counts are tested in tests/metrics/test_flops.cpp. Each net's forward and backward pass on OneDnn is compared with torchvision's in
// test_resnet.cpp and test_lenet5_alexnet_vgg.cpp (one translation unit per Model, for compile time).
#include <gtest/gtest.h>

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

// torchvision's counts (sum(p.numel() for p in model.parameters()) with num_classes=10).
static_assert(ResNet18In::kParams == 11181642);
static_assert(ResNet18Cifar::kParams == 11173962);
static_assert(ResNet34In::kParams == 21289802);
static_assert(ResNet50In::kParams == 23528522);
static_assert(AlexNet64::kParams == 57044810);
static_assert(VGG16BNIn::kParams == 134309962);
static_assert(VGG16<Cifar, 10>::kParams == 134301514);
static_assert(nets::LeNet5<Cifar>::kParams == 62006);

// Running statistics: two per BatchNorm channel.
static_assert(ResNet18In::kBuffers == 2 * (64 + 4 * 64 + 4 * 128 + 128 + 4 * 256 + 256 + 4 * 512 + 512));

// Shapes: ResNet-18's ImageNet stem on 32x32 leaves 512 x 1 x 1 before pooling; AlexNet's features end at 1x1.
static_assert(std::is_same_v<ResNet18In::output_shape, Flat<10>>);
static_assert(std::is_same_v<MaxPool<3, 2>::at<Shape<256, 3, 3>>::output, Shape<256, 1, 1>>);

TEST(zoo, parameter_counts_equal_torchvision) {
  EXPECT_EQ(ResNet18In::kParams, 11181642u);
  EXPECT_EQ(ResNet50In::kParams, 23528522u);
  EXPECT_EQ(AlexNet64::kParams, 57044810u);
  EXPECT_EQ(VGG16BNIn::kParams, 134309962u);
  EXPECT_EQ(ResNet18Cifar::kParams, 11173962u);
}

}  // namespace
