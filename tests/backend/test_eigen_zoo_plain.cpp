// The zoo's networks without ResNet blocks on OneDnn and Eigen from the same seed: outputs, parameter
// gradients, input gradients and running statistics within 1e-4 of each tensor's scale
// (tests/support/onednn_vs_eigen.hpp), one training step then one evaluation step, batch 2.
//
// Dropout (AlexNet, VGG) is compared with identical masks: both backends draw the mask of each plain-NCHW
// element from the model seed, the node and the step, so the training step drops the same activations and
// the evaluation step passes them all. AlexNet at 3x64x64 ends its features at 1x1 and replicates the pixel
// to 6x6; VGG at 3x32x32 replicates 1x1 to 7x7.
//
// MobileNetV2 (depthwise convolutions on oneDNN's grouped primitive against Eigen's own depthwise kernel, ReLU6,
// inverted residuals) at 3x64x64 (its last blocks on 2x2 maps), batch 8, BatchNorm's biases shifted by 3 as for the
// deep ResNets (test_eigen_zoo_resnet.cpp says why; it also keeps ReLU6's inputs 3 deviations from both kinks):
// within 1e-4 (2.8e-6 measured, AVX-512).
//
// VGG16BN uses seed 7: with seed 5 one BatchNorm+ReLU output of the third block lies within float rounding of
// ReLU's kink, the two backends take different sides, and BatchNorm's backward spreads that one element's
// gradient over its channel (parameter gradients then differ by 2.7e-3 of their scale below that layer).
#include <gtest/gtest.h>

#include "sinew/backend/eigen.hpp"  // first: EIGEN_USE_THREADS before any Tensor include
#include "../support/onednn_vs_eigen.hpp"
#include "sinew/nets/alexnet.hpp"
#include "sinew/nets/lenet5.hpp"
#include "sinew/nets/mobilenet_v2.hpp"
#include "sinew/nets/vgg.hpp"

namespace {
using namespace sinew;
using Cifar = Input<3, 32, 32>;
constexpr test::EquivalenceOptions kTrainThenEval{.batch = 2, .seed = 5, .training_steps = 1, .eval_step = true};

TEST(onednn_vs_eigen, lenet5_3x32x32_batch2_train_then_eval) {
  test::expect_equivalent<nets::LeNet5<Cifar>>(kTrainThenEval);
}
TEST(onednn_vs_eigen, alexnet_3x64x64_batch2_train_then_eval) {
  test::expect_equivalent<nets::AlexNet<Input<3, 64, 64>, 10>>(kTrainThenEval);
}
TEST(onednn_vs_eigen, vgg16_3x32x32_batch2_train_then_eval) {
  test::expect_equivalent<nets::VGG16<Cifar, 10>>(kTrainThenEval);
}
TEST(onednn_vs_eigen, mobilenet_v2_3x64x64_batch8_train_then_eval) {
  test::expect_equivalent<nets::MobileNetV2<Input<3, 64, 64>, 10>>(
      {.batch = 8, .training_steps = 1, .eval_step = true, .batch_norm_bias_shift = 3});
}
TEST(onednn_vs_eigen, vgg16bn_3x32x32_batch2_train_then_eval) {
  test::expect_equivalent<nets::VGG16BN<Cifar, 10>>({.batch = 2, .seed = 7, .training_steps = 1, .eval_step = true});
}

}  // namespace
