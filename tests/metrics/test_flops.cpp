// metrics/flops.hpp: forward multiply-adds per image, counted by hand from the zoo nets' layer shapes and checked
// at compile time and at run time.
#include <gtest/gtest.h>

#include "sinew/metrics/flops.hpp"
#include "sinew/metrics/traffic.hpp"
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

// Activation floats per image (sinew/metrics/traffic.hpp), counted by hand. LeNet-5 on 3x32x32: conv, tanh and
// pool outputs of 6 x 28 x 28, 6 x 28 x 28, 6 x 14 x 14, then 16 x 10 x 10 twice and 16 x 5 x 5, the flattened 400,
// and the inner products' 120, 84 (each with its tanh) and 10. The input is not an activation a layer writes.
static_assert(metrics::forward_activations<nets::LeNet5<Cifar>> ==
              2 * 4704 + 1176 + 2 * 1600 + 400 + 400 + 2 * 120 + 2 * 84 + 10);  // 15,002
// A residual block counts its branches' layers and its sum: 2 x 4 x 4 after the conv, after the ReLU, the
// shortcut's projection (a 1x1 conv, then batch norm) and the sum.
using SmallResidual = Sequential<Input<2, 4, 4>, Residual<Chain<Conv2d<2, 3, 1, 1>, ReLU>,
                                                          Chain<Conv2d<2, 1, 1, 0, false>, BatchNorm2d>>>;
static_assert(metrics::forward_activations<SmallResidual> == 5 * 32);

TEST(traffic, a_training_step_moves_activations_five_times_and_parameters_six_times) {
  constexpr double a = 15002, p = double(nets::LeNet5<Cifar>::kParams);
  EXPECT_EQ(metrics::training_bytes<nets::LeNet5<Cifar>>(42), 4 * (5 * a * 42 + 6 * p));
  EXPECT_EQ(metrics::inference_bytes<nets::LeNet5<Cifar>>(1), 4 * (2 * a + p));
  // A net twice as deep in activations moves more at the same batch: the count is not the parameters alone.
  EXPECT_GT(metrics::training_bytes<ResNet18Cifar>(42), metrics::training_bytes<nets::LeNet5<Cifar>>(42));
}
