// metrics/flops.hpp: forward multiply-adds per image, counted by hand from the zoo nets' layer shapes and checked
// at compile time and at run time.
#include <gtest/gtest.h>

#include "sinew/metrics/flops.hpp"
#include "sinew/nets/lenet5.hpp"
#include "sinew/nets/resnet.hpp"

namespace {
using namespace sinew;
using namespace sinew::nets;

using Cifar = Input<3, 32, 32>;
using ResNet18Cifar = ResNet18<Cifar, 10, CifarStem>;

// Forward multiply-adds per image (sinew/metrics/flops.hpp), counted by hand from the layers' shapes. LeNet-5 on
// 3x32x32: two 5x5 convolutions (3->6 to 28x28, 6->16 to 10x10) and three inner products.
static_assert(metrics::forward_macs<nets::LeNet5<Cifar>> ==
              6.0 * 28 * 28 * 3 * 25 + 16.0 * 10 * 10 * 6 * 25 + 400 * 120 + 120 * 84 + 84 * 10);  // 651,720

// The CIFAR-stem ResNet-18: the 3->64 stem at 32x32, layer1's four 64->64 3x3 convolutions at 32x32, and in each of
// layer2 to layer4 (C channels at S x S out) one strided C/2->C 3x3, three C->C 3x3 and the C/2->C 1x1 projection,
// then the 512->10 classifier: 555,422,720, the 0.56 G usually quoted. Leaving out the residual blocks' branches
// would leave the stem and the classifier; leaving out the projections, 3 x 2,097,152 fewer.
constexpr double stage_macs(double c, double s) {
  return s * s * c * (c / 2) * 9 + 3 * s * s * c * c * 9 + s * s * c * (c / 2);
}
static_assert(metrics::forward_macs<ResNet18Cifar> == 32.0 * 32 * 64 * 3 * 9 + 4 * 32.0 * 32 * 64 * 64 * 9 +
                                                          stage_macs(128, 16) + stage_macs(256, 8) + stage_macs(512, 4) +
                                                          512 * 10);
static_assert(metrics::training_flops<ResNet18Cifar>(42) == 6.0 * 42 * 555422720.0);
// torchvision documents ResNet-18 (ImageNet stem, 224x224, 1000 classes) at 1.81 GFLOPS, its multiply-adds.
static_assert(metrics::forward_macs<ResNet18<Input<3, 224, 224>, 1000>> == 1814073344.0);

TEST(flops, forward_multiply_adds_count_convolutions_inner_products_and_residual_branches) {
  EXPECT_EQ(metrics::forward_macs<nets::LeNet5<Cifar>>, 651720.0);
  EXPECT_EQ(metrics::forward_macs<ResNet18Cifar>, 555422720.0);
  EXPECT_EQ(metrics::inference_flops<ResNet18Cifar>(1), 2 * 555422720.0);
}

}  // namespace
