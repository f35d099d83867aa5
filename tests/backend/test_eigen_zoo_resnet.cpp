// The ResNets of the model zoo on OneDnn and Eigen from the same seed: outputs, parameter gradients, input
// gradients and running statistics (tests/support/onednn_vs_eigen.hpp), at 3x32x32.
//
// Batch 2, CIFAR stem: one training step (batch statistics) then one evaluation step, within 1e-4.
// Batch 2, ImageNet stem: the evaluation step within 1e-4. A training step is not compared at batch 2: the
// last stage runs on 1x1 maps, where BatchNorm normalises 2 values per channel and its output is +-gamma
// with a slope of 1 / (2 sqrt(eps)) = 158 in their difference. No float implementation can be held to 1e-4
// there: moving every input float by one ulp moves OneDnn's own training-step output by 5.6e-4 of its scale
// (ResNet-18; parameter gradients 6.4e-3) and by 0.78 (ResNet-50).
// Batch 8, ImageNet stem, training step then evaluation step: ResNet-18 within 1e-4; ResNet-50 within 1e-4 or
// twice OneDnn's own one-ulp sensitivity, whichever is larger, per tensor (each prints its tolerance, and the
// summary line names the tensor nearest its own); ResNet-50 2.3e-5 on a Zen 4 (AVX-512), its one-ulp sensitivity
// below 5e-5 on every tensor, so its calibrated tolerance is 1e-4 throughout. ResNet-34 at batch 16, calibrated
// the same way: at batch 8 its parameter gradients differed by 9.7e-5 to 1.5e-4 on a Zen 4, and by 2.7e-4 on a
// Zen 3 once its last stage's stride-2 convolution ran as an inner product (onednn/small_conv2d.hpp), all of it in
// one output channel of that layer, whose batch norm normalises 8 values with a small spread; at batch 16,
// 6.7e-5 on the same Zen 3.
//
// Training steps shift every BatchNorm bias by +3 on both backends (EquivalenceOptions::batch_norm_bias_shift):
// without it, one ReLU input within rounding of 0 fell on different sides on an AVX-512 CPU (Zen 4), and the
// CIFAR-stem ResNet-18 differed by 0.0498 and ResNet-50 by 0.0185 of their gradients' scale, passing on AVX2.
//
// ResNeXt-50 32x4d (grouped 3x3 convolutions: oneDNN's grouped primitive against Eigen's per-group GEMM) as
// ResNet-50, at batch 8, training step then evaluation step, calibrated.
//
// One translation unit for the four ResNets and ResNeXt: their blocks' branch chains are the same types wherever the
// input shape repeats, so they compile once, and each net's Model is instantiated once for both batches.
#include <gtest/gtest.h>

#include "sinew/backend/eigen.hpp"  // first: EIGEN_USE_THREADS before any Tensor include
#include "../support/onednn_vs_eigen.hpp"
#include "sinew/nets/resnet.hpp"

namespace {
using namespace sinew;
using Cifar = Input<3, 32, 32>;
using ResNet18ImageNetStem = nets::ResNet18<Cifar, 10>;
using ResNet34ImageNetStem = nets::ResNet34<Cifar, 10>;
using ResNet50ImageNetStem = nets::ResNet50<Cifar, 10>;
using ResNet18CifarStem = nets::ResNet18<Cifar, 10, nets::CifarStem>;
using ResNeXt50ImageNetStem = nets::ResNeXt50_32x4d<Cifar, 10>;

constexpr test::EquivalenceOptions kTrainThenEval{
    .batch = 2, .training_steps = 1, .eval_step = true, .batch_norm_bias_shift = 3};
constexpr test::EquivalenceOptions kEvalOnly{.batch = 2, .training_steps = 0, .eval_step = true};
constexpr test::EquivalenceOptions kTrainBatch8{.batch = 8, .training_steps = 1, .eval_step = true};
constexpr test::EquivalenceOptions kTrainBatch8Calibrated{
    .batch = 8, .training_steps = 1, .eval_step = true, .sensitivity = 2, .batch_norm_bias_shift = 3};
constexpr test::EquivalenceOptions kTrainBatch16Calibrated{
    .batch = 16, .training_steps = 1, .eval_step = true, .sensitivity = 2, .batch_norm_bias_shift = 3};

TEST(onednn_vs_eigen, resnet18_cifar_stem_3x32x32_batch2_train_then_eval) {
  test::expect_equivalent<ResNet18CifarStem>(kTrainThenEval);
}
TEST(onednn_vs_eigen, resnet18_imagenet_stem_3x32x32_batch2_eval) {
  test::expect_equivalent<ResNet18ImageNetStem>(kEvalOnly);
}
TEST(onednn_vs_eigen, resnet34_imagenet_stem_3x32x32_batch2_eval) {
  test::expect_equivalent<ResNet34ImageNetStem>(kEvalOnly);
}
TEST(onednn_vs_eigen, resnet50_imagenet_stem_3x32x32_batch2_eval) {
  test::expect_equivalent<ResNet50ImageNetStem>(kEvalOnly);
}
TEST(onednn_vs_eigen, resnet18_imagenet_stem_3x32x32_batch8_train_then_eval) {
  test::expect_equivalent<ResNet18ImageNetStem>(kTrainBatch8);
}
TEST(onednn_vs_eigen, resnet34_imagenet_stem_3x32x32_batch16_train_then_eval_calibrated) {
  test::expect_equivalent<ResNet34ImageNetStem>(kTrainBatch16Calibrated);
}
TEST(onednn_vs_eigen, resnet50_imagenet_stem_3x32x32_batch8_train_then_eval_calibrated) {
  test::expect_equivalent<ResNet50ImageNetStem>(kTrainBatch8Calibrated);
}
TEST(onednn_vs_eigen, resnext50_32x4d_imagenet_stem_3x32x32_batch8_train_then_eval_calibrated) {
  test::expect_equivalent<ResNeXt50ImageNetStem>(kTrainBatch8Calibrated);
}

}  // namespace
