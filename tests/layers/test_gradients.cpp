// Every layer, fused pair, block and small net as one list of cases, each run through the numerical-gradient
// harness on every backend (gradient/<backend>.<case>), compared between OneDnn and Eigen from the same seed
// (onednn_vs_eigen.<case>: outputs, parameter and input gradients, running statistics; checks the NHWC layout, the
// PyTorch weight layout, padding and the flatten order against an independent implementation), and checked at
// compile time to profile every node in a declared operator kind. A new layer adds its cases here; a new
// backend adds one type to Backends (a backend::Mix is one).
// This file: convolutions (plain, thin, grouped, depthwise, dilated), dense layers and activations;
// test_gradients_blocks.cpp: pooling, normalisation, dropout, residual blocks and small nets.
#include <gtest/gtest.h>

#include "layer_cases.hpp"

namespace {
using namespace sinew;
using namespace sinew::test::layers;

// clang-format off
SINEW_LAYER_CASE(conv2d_k3_s1_p1, ({}), Net<Input<3, 7, 7>, Conv2d<4, 3, 1, 1>>)
SINEW_LAYER_CASE(conv2d_k5_s1_p0, ({}), Net<Input<2, 9, 9>, Conv2d<3, 5>>)
SINEW_LAYER_CASE(conv2d_k3_s2_p1, ({}), Net<Input<3, 8, 8>, Conv2d<5, 3, 2, 1>>)
SINEW_LAYER_CASE(conv2d_k3_s2_p1_odd_5x4, ({}), Net<Input<3, 5, 4>, Conv2d<5, 3, 2, 1>>)
// Taps that only meet padding are dropped on oneDNN: their gradient must still be exactly zero, the others right.
SINEW_LAYER_CASE(conv2d_k3_p1_on_a_1x1_image, ({}), Net<Input<6, 1, 1>, Conv2d<5, 3, 1, 1>>)
SINEW_LAYER_CASE(conv2d_k3_s2_p1_from_2x2_to_1x1_without_bias, ({.seed = 4}), Net<Input<4, 2, 2>, Conv2d<5, 3, 2, 1, false>, ReLU>)
SINEW_LAYER_CASE(conv2d_trimmed_rows_kept_columns, ({}), Net<Input<3, 1, 6>, Conv2d<4, 3, 2, 1>>)
// An output wider than lowered_conv2d_op's stays on oneDNN's convolution, its rows trimmed to the kernel's centre.
SINEW_LAYER_CASE(conv2d_trimmed_rows_on_onednn_primitives, ({.seed = 5}), Net<Input<3, 1, 140>, Conv2d<4, 3, 2, 1>, ReLU>)
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<3, 1, 140>, Conv2d<4, 3, 2, 1>>::nodes<true>>::type>,
                             backend::onednn::conv2d_op>);
// A first layer oneDNN runs on its gemm-based convolution under AVX2 (3 channels, 11x11 at stride 4: AlexNet's),
// which runs NHWC where oneDNN has AVX2 brgemm convolutions (onednn/conv2d.hpp: nhwc_where_gemm) and lowered, its
// patches gathered a kernel row at a time, where it has none (oneDNN 2.6: lowered_where_gemm_conv2d_op).
SINEW_LAYER_CASE(conv2d_k11_s4_three_channels_first_layer, ({.seed = 12}), Net<Input<3, 23, 23>, Conv2d<8, 11, 4, 2>, ReLU>)
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<3, 23, 23>, Conv2d<8, 11, 4, 2>>::nodes<true>>::type>,
                             backend::onednn::lowered_where_gemm_conv2d_op>);
// A 2x2 or 3x3 kernel on a small output image (at most 4x4, or 8x8 from 128 channels; a strided 1x1 kernel, at
// most 2x2) is an inner product
// over the input's patches (onednn/lowered_conv2d.hpp): AlexNet's last three layers, VGG's and ResNet's late
// stages; a 5x5 kernel stays on oneDNN's convolution. Padding on both sides at stride 1 and 2, an odd image, 17 channels, a fused activation, no bias, a 1x1 kernel at stride 2
// (ResNet's projection from 2x2 to 1x1), and two in a row (NHWC from one to the next).
SINEW_LAYER_CASE(conv2d_lowered_k3_p1_18_to_20_channels_fused_relu, ({.seed = 8}), Net<Input<18, 3, 3>, Conv2d<20, 3, 1, 1>, ReLU>)
SINEW_LAYER_CASE(conv2d_lowered_k3_s2_p1_odd_7x5_without_bias_batch_3, ({.batch = 3}), Net<Input<17, 7, 5>, Conv2d<6, 3, 2, 1, false>>)
SINEW_LAYER_CASE(conv2d_lowered_k1_s2_from_2x2_to_1x1_fused_relu, ({.seed = 9}), Net<Input<20, 2, 2>, Conv2d<24, 1, 2, 0>, ReLU>)
SINEW_LAYER_CASE(conv2d_lowered_pair_k3_then_k2_s2, ({}), Net<Input<17, 4, 4>, Conv2d<18, 3, 1, 1>, ReLU, Conv2d<5, 2, 2, 0>>)
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<18, 3, 3>, Conv2d<20, 3, 1, 1>>::nodes<true>>::type>,
                             backend::onednn::lowered_on_avx2_conv2d_op>);
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<20, 2, 2>, Conv2d<24, 1, 2, 0>>::nodes<true>>::type>,
                             backend::onednn::lowered_conv2d_op>);
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<3, 16, 16>, Conv2d<128, 3, 2, 1>>::nodes<true>>::type>,
                             backend::onednn::lowered_on_avx2_conv2d_op>);
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<3, 16, 16>, Conv2d<20, 3, 2, 1>>::nodes<true>>::type>,
                             backend::onednn::conv2d_op>);
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<3, 18, 18>, Conv2d<20, 3, 2, 1>>::nodes<true>>::type>,
                             backend::onednn::conv2d_op>);
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<20, 8, 8>, Conv2d<24, 1, 2, 0>>::nodes<true>>::type>,
                             backend::onednn::conv2d_op>);
// A 1x1 kernel at stride 1 onto at most 4x4 pixels (ResNet-50's and MobileNetV2's pointwise layers on small images)
// is the inner product over the NHWC image read in place, its input gradient written in place too: from an NCHW
// input (converted first), and two in a row with a fused ReLU between (the second reads the first's output).
SINEW_LAYER_CASE(conv2d_lowered_k1_s1_4x4_fused_relu, ({.seed = 15}), Net<Input<20, 4, 4>, Conv2d<24, 1>, ReLU>)
SINEW_LAYER_CASE(conv2d_lowered_k1_s1_pair_odd_3x2_without_bias, ({.batch = 3, .seed = 16}),
                 Net<Input<18, 3, 2>, Conv2d<21, 1, 1, 0, false>, ReLU, Conv2d<17, 1, 1, 0, false>>)
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<20, 4, 4>, Conv2d<24, 1>>::nodes<true>>::type>,
                             backend::onednn::lowered_conv2d_op>);
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<20, 8, 8>, Conv2d<24, 1>>::nodes<true>>::type>,
                             backend::onednn::conv2d_op>);
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<20, 7, 7>, Conv2d<24, 5, 1, 2>>::nodes<true>>::type>,
                             backend::onednn::conv2d_op>);
// A 3x3 kernel at stride 1 with padding 1 and neither bias nor fused activation onto a small image (4x4 to 8x8
// pixels, at most 256 channels; ResNet's 3x3 layers on 32x32 inputs) runs as Winograd's F(2x2, 3x3)
// where oneDNN runs AVX2 kernels (onednn/winograd_conv2d.hpp; oneDNN's direct convolution where it runs AVX-512
// ones, so `ctest --preset numerics-avx2` runs these on the Winograd form): 4x4, and an odd 5x7 image (last tiles half outside) through batch norm and ReLU
// into a second one (NHWC from one to the next). Bias, a fused activation or a stride keep the other ops.
SINEW_LAYER_CASE(conv2d_winograd_k3_p1_4x4_17_to_20_channels, ({.seed = 13}), Net<Input<17, 4, 4>, Conv2d<20, 3, 1, 1, false>>)
SINEW_LAYER_CASE(conv2d_winograd_pair_odd_5x7_through_batch_norm, ({.batch = 3, .seed = 14}),
                 Net<Input<18, 5, 7>, Conv2d<17, 3, 1, 1, false>, BatchNorm2d, ReLU, Conv2d<19, 3, 1, 1, false>>)
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<17, 4, 4>, Conv2d<20, 3, 1, 1, false>>::nodes<true>>::type>,
                             backend::onednn::winograd_on_avx2_conv2d_op>);
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<64, 8, 8>, Conv2d<64, 3, 1, 1, false>>::nodes<true>>::type>,
                             backend::onednn::winograd_on_avx2_conv2d_op>);
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<17, 4, 4>, Conv2d<20, 3, 1, 1, true>>::nodes<true>>::type>,
                             backend::onednn::lowered_on_avx2_conv2d_op>);
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<512, 4, 4>, Conv2d<512, 3, 1, 1, false>>::nodes<true>>::type>,
                             backend::onednn::lowered_on_avx2_conv2d_op>);
// One output pixel from an image no larger than the kernel is an inner product with the taps that meet it
// (onednn/small_conv2d.hpp): ResNet's last stage on 32x32 inputs.
SINEW_LAYER_CASE(conv2d_k1_on_a_1x1_image_fused_relu, ({.seed = 7}), Net<Input<6, 1, 1>, Conv2d<5, 1>, ReLU>)
SINEW_LAYER_CASE(conv2d_k2_on_a_2x2_image_to_1x1_batch_5, ({.batch = 5, .seed = 12}), Net<Input<3, 2, 2>, Conv2d<4, 2>>)
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<3, 2, 2>, Conv2d<4, 2>>::nodes<true>>::type>,
                             backend::onednn::small_conv2d_op>);
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<6, 1, 1>, Conv2d<5, 1>>::nodes<true>>::type>,
                             backend::onednn::small_conv2d_op>);
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<6, 1, 1>, Conv2d<5, 3, 1, 1>>::nodes<true>>::type>,
                             backend::onednn::small_conv2d_op>);
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<4, 2, 2>, Conv2d<5, 3, 2, 1, false>>::nodes<true>>::type>,
                             backend::onednn::small_conv2d_op>);
// On an image smaller than the kernel OneDnn runs the convolution as an inner product (onednn/small_conv2d.hpp).
SINEW_LAYER_CASE(conv2d_k3_p1_on_a_2x2_image_as_inner_product, ({}), Net<Input<3, 2, 2>, Conv2d<4, 3, 1, 1>>)
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<3, 2, 2>, Conv2d<4, 3, 1, 1>>::nodes<true>>::type>,
                             backend::onednn::small_conv2d_op>);
// Four rows or more run the inner product's forward as a matmul (onednn/weighted_layer.hpp); fewer, as itself.
SINEW_LAYER_CASE(conv2d_k3_p1_on_a_3x2_image_fused_relu_without_bias, ({.batch = 4, .seed = 6}), Net<Input<3, 3, 2>, Conv2d<5, 3, 1, 1, false>, ReLU>)
SINEW_LAYER_CASE(conv2d_k3_s2_p1_3x3_to_2x2_then_batch_norm, ({.batch = 3}), Net<Input<2, 3, 3>, Conv2d<4, 3, 2, 1>, BatchNorm2d>)
SINEW_LAYER_CASE(conv2d_without_bias, ({}), Net<Input<2, 6, 6>, Conv2d<4, 3, 1, 1, false>>)
SINEW_LAYER_CASE(conv2d_fused_tanh, ({}), Net<Input<2, 6, 6>, Conv2d<3, 3>, Tanh>)
SINEW_LAYER_CASE(conv2d_fused_relu, ({.seed = 11}), Net<Input<2, 6, 6>, Conv2d<3, 3, 1, 1>, ReLU>)
SINEW_LAYER_CASE(conv2d_fused_sigmoid, ({}), Net<Input<2, 6, 6>, Conv2d<3, 3>, Sigmoid>)
SINEW_LAYER_CASE(conv2d_16_channels_k3_s1_p1, ({}), Net<Input<16, 5, 5>, Conv2d<16, 3, 1, 1>>)
// Stride 1 with at most 16 channels runs on sinew's own kernels on OneDnn (onednn/thin_conv2d.hpp): LeNet-5's
// pair with its fused tanh and pooling at an odd batch, a padded layer without activation (7 output channels pad
// a block of 8, 5 x 5 x 5 = 125 taps pad the tiles), and 17 input channels keep oneDNN's conv2d_op at stride 1.
SINEW_LAYER_CASE(conv2d_thin_lenet_pair_fused_tanh_avg_pool_batch_3, ({.batch = 3}), Net<Input<3, 14, 14>, Conv2d<6, 5>, Tanh, AvgPool<2>, Conv2d<16, 3>, Tanh>)
SINEW_LAYER_CASE(conv2d_thin_k5_p2_5_to_7_channels_batch_5, ({.batch = 5}), Net<Input<5, 7, 9>, Conv2d<7, 5, 1, 2>>)
SINEW_LAYER_CASE(conv2d_17_channels_k3_s1_p1_on_onednn_primitives, ({}), Net<Input<17, 9, 9>, Conv2d<4, 3, 1, 1>>)
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<5, 7, 9>, Conv2d<7, 5, 1, 2>>::nodes<true>>::type>,
                             backend::onednn::thin_conv2d_op>);
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<17, 9, 9>, Conv2d<4, 3, 1, 1>>::nodes<true>>::type>,
                             backend::onednn::conv2d_op>);
// Grouped, depthwise and dilated convolutions (Conv2d<Out, K, S, P, Bias, Dilation, Groups>): on OneDnn, oneDNN's
// grouped primitive even where the shape is thin (at most 16 channels at stride 1) or the image no larger than the
// kernel; on Eigen, the depthwise kernel where groups equal the channels on both sides, else im2col + GEMM per group.
// A depthwise layer with 2 outputs per channel is grouped, not depthwise. The 24x24 case has Eigen cut its rows into
// several blocks and its weight gradient into shares per thread.
SINEW_LAYER_CASE(conv2d_grouped_in4_g2_k3_p1, ({}), Net<Input<4, 6, 6>, Conv2d<6, 3, 1, 1, true, 1, 2>>)
SINEW_LAYER_CASE(conv2d_grouped_in8_g4_k1_fused_relu_batch_3, ({.batch = 3, .seed = 5}), Net<Input<8, 5, 5>, Conv2d<8, 1, 1, 0, true, 1, 4>, ReLU>)
SINEW_LAYER_CASE(depthwise_k3_s1_p1, ({}), Net<Input<5, 6, 6>, DepthwiseConv2d<5, 3, 1, 1>>)
SINEW_LAYER_CASE(depthwise_k3_s2_p1_bias_fused_relu_batch_3, ({.batch = 3, .seed = 4}), Net<Input<8, 7, 7>, DepthwiseConv2d<8, 3, 2, 1, true>, ReLU>)
SINEW_LAYER_CASE(depthwise_k3_s1_p1_on_a_2x2_image, ({}), Net<Input<3, 2, 2>, DepthwiseConv2d<3, 3, 1, 1>>)
SINEW_LAYER_CASE(depthwise_k3_d2_p2_then_pointwise, ({}), Net<Input<4, 7, 6>, Conv2d<4, 3, 1, 2, false, 2, 4>, Conv2d<6, 1>>)
SINEW_LAYER_CASE(conv2d_groups_equal_inputs_2_outputs_per_channel, ({}), Net<Input<4, 6, 6>, Conv2d<8, 3, 1, 1, false, 1, 4>>)
SINEW_LAYER_CASE(conv2d_dilated_d2_k3_p2, ({}), Net<Input<3, 8, 8>, Conv2d<4, 3, 1, 2, true, 2>>)
SINEW_LAYER_CASE(conv2d_dilated_d2_k3_p2_24x24_in_blocks_and_shares, ({}), Net<Input<3, 24, 24>, Conv2d<4, 3, 1, 2, true, 2>>)
SINEW_LAYER_CASE(conv2d_dilated_d3_k3_s2_p1_17_channels, ({}), Net<Input<17, 9, 9>, Conv2d<5, 3, 2, 1, true, 3>>)
SINEW_LAYER_CASE(conv2d_grouped_dilated_g2_d2_k3_s2_p1, ({}), Net<Input<6, 9, 9>, Conv2d<4, 3, 2, 1, false, 2, 2>>)
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<5, 6, 6>, DepthwiseConv2d<5, 3, 1, 1>>::nodes<true>>::type>,
                             backend::onednn::conv2d_op>);
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<3, 2, 2>, DepthwiseConv2d<3, 3, 1, 1>>::nodes<true>>::type>,
                             backend::onednn::conv2d_op>);
static_assert(std::is_same_v<backend::Eigen::op<sinew::detail::last<Net<Input<5, 6, 6>, DepthwiseConv2d<5, 3, 1, 1>>::nodes<true>>::type>,
                             backend::eigen::depthwise_conv2d_op>);
static_assert(std::is_same_v<backend::Eigen::op<sinew::detail::last<Net<Input<4, 6, 6>, Conv2d<8, 3, 1, 1, false, 1, 4>>::nodes<true>>::type>,
                             backend::eigen::grouped_conv2d_op>);
static_assert(std::is_same_v<backend::Eigen::op<sinew::detail::last<Net<Input<3, 8, 8>, Conv2d<4, 3, 1, 2, true, 2>>::nodes<true>>::type>,
                             backend::eigen::grouped_conv2d_op>);
SINEW_LAYER_CASE(dense_on_flat_input, ({}), Net<Input<12, 1, 1>, Dense<5>>)
SINEW_LAYER_CASE(dense_fused_tanh, ({}), Net<Input<12, 1, 1>, Dense<5>, Tanh>)
SINEW_LAYER_CASE(dense_without_bias, ({.batch = 4}), Net<Input<7, 1, 1>, Dense<3, false>>)
SINEW_LAYER_CASE(flatten_then_dense, ({}), Net<Input<2, 3, 3>, Flatten, Dense<4>>)
SINEW_LAYER_CASE(conv2d_flatten_dense, ({}), Net<Input<2, 6, 6>, Conv2d<9, 3>, Flatten, Dense<4>>)
SINEW_LAYER_CASE(relu, ({}), Net<Input<2, 5, 5>, ReLU>)
SINEW_LAYER_CASE(tanh, ({}), Net<Input<2, 5, 5>, Tanh>)
SINEW_LAYER_CASE(sigmoid, ({}), Net<Input<2, 5, 5>, Sigmoid>)
SINEW_LAYER_CASE(leaky_relu, ({}), Net<Input<2, 5, 5>, LeakyReLU>)
SINEW_LAYER_CASE(conv2d_fused_leaky_relu, ({}), Net<Input<2, 6, 6>, Conv2d<16, 3>, LeakyReLU>)
SINEW_LAYER_CASE(dense_fused_leaky_relu, ({}), Net<Input<12, 1, 1>, Dense<5>, LeakyReLU>)
SINEW_LAYER_CASE(batch_norm2d_fused_leaky_relu_training, ({.batch = 3}), Net<Input<3, 4, 4>, BatchNorm2d, LeakyReLU>)
// ReLU6 with inputs 8 times standard normal, so that both kinks (0 and 6) are met and the flat part past 6 is
// checked: unfused, as a post-op of oneDNN's convolution (17 channels: not the thin kernels) and inner product,
// and after BatchNorm2d (MobileNetV2's pattern; the SIMD kernel after oneDNN's batch norm). A convolution weight
// moves 32 outputs by its input (about 8) times the step: at the default step some output lies closer to a kink
// than even the smallest difference reaches, all three differences then agree on a wrong slope, and the harness
// cannot tell; a step of 1e-3 makes that ten times rarer.
SINEW_LAYER_CASE(relu6, ({.input_scale = 8}), Net<Input<2, 5, 5>, ReLU6>)
SINEW_LAYER_CASE(conv2d_17_channels_fused_relu6, ({.step = 1e-3f, .input_scale = 8}), Net<Input<17, 4, 4>, Conv2d<4, 3, 1, 1>, ReLU6>)
SINEW_LAYER_CASE(dense_fused_relu6, ({.input_scale = 8}), Net<Input<12, 1, 1>, Dense<5>, ReLU6>)
SINEW_LAYER_CASE(batch_norm2d_fused_relu6_training, ({.batch = 3}), Net<Input<3, 4, 4>, BatchNorm2d, ReLU6>)
// clang-format on

}  // namespace
