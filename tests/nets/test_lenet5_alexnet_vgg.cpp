// LeNet-5, AlexNet and the VGGs against PyTorch (tests/support/torchvision_golden.hpp), with dropout p = 0 on both sides
// (torchvision's `dropout` argument, sinew's DropoutPercent): sinew draws its masks from its own generator.
// Each net's Model is instantiated here only. Beside them, a small net of grouped, depthwise and dilated
// convolutions against PyTorch's Conv2d(groups=, dilation=) (tests/reference/reference_nets.py, grouped_dilated).
#include "../support/torchvision_golden.hpp"

#include "sinew/nets/alexnet.hpp"
#include "sinew/nets/lenet5.hpp"
#include "sinew/nets/vgg.hpp"

namespace {
using namespace sinew;
using namespace sinew::nets;
using Cifar = Input<3, 32, 32>;

TEST(onednn_vs_pytorch, lenet5_3x32x32_matches_pytorch) { test::expect_equivalent_to_torchvision<LeNet5<Cifar, 10>>("lenet5"); }
TEST(onednn_vs_pytorch, alexnet_3x64x64_dropout0_matches_torchvision) {
  test::expect_equivalent_to_torchvision<AlexNet<Input<3, 64, 64>, 10, 0>>("alexnet");
}
TEST(onednn_vs_pytorch, vgg16_3x32x32_dropout0_matches_torchvision) {
  test::expect_equivalent_to_torchvision<VGG16<Cifar, 10, 0>>("vgg16");
}
// The golden batch sits next to a max pool's tie: features.33's window at image 2, channel 321, rows and columns 2-3
// holds 0.5750035 and 0.5750021 (sinew on AVX-512 kernels; float64 agrees on the order), and the gradient 3.6e-3
// goes to the larger. Another summation order in float32 can swap them: lowered convolutions on oneDNN's AVX-512
// kernels did (0.5750003 and 0.5750022), and every gradient from features.28 down came out 1e-2 from the golden
// values, each op consistent with its own inputs. With the forms each ISA runs today the test passes at 1.9e-5
// (AVX-512) and 7.9e-5 (ONEDNN_MAX_CPU_ISA=AVX2, lowered); a change that fails it here by about 1e-2 should look at
// that window first.
TEST(onednn_vs_pytorch, vgg16_bn_3x32x32_dropout0_matches_torchvision) {
  test::expect_equivalent_to_torchvision<VGG16BN<Cifar, 10, 0>>("vgg16_bn");
}

// Every layer is numbered as nn.Sequential numbers it (the ReLUs count): 0, 3 and 5 are the convolutions.
using GroupedDilated = Sequential<Input<3, 16, 16>, Conv2d<8, 3, 1, 2, true, 2>, BatchNorm2d, ReLU,
                                  DepthwiseConv2d<8, 3, 1, 1>, ReLU, Conv2d<12, 3, 2, 2, true, 2, 4>, BatchNorm2d, ReLU,
                                  GlobalAvgPool, Flatten, Dense<10>>;
TEST(onednn_vs_pytorch, grouped_depthwise_and_dilated_convolutions_match_pytorch) {
  test::expect_equivalent_to_torchvision<GroupedDilated>("grouped_dilated");
}
}  // namespace
