// Every layer, fused pair, block and small net as one list of cases, each run through the numerical-gradient
// harness on every backend (gradient/<backend>.<case>), compared between OneDnn and Eigen from the same seed
// (onednn_vs_eigen.<case>: outputs, parameter and input gradients, running statistics; checks the NHWC layout, the
// PyTorch weight layout, padding and the flatten order against an independent implementation), and checked at
// compile time to profile every node in a declared operator kind. A new layer adds its cases here; a new
// backend adds one type to Backends (a backend::Mix is one).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>
#include <type_traits>

#include "sinew/backend/eigen.hpp"  // first: EIGEN_USE_THREADS before any Tensor include
#include "../support/onednn_vs_eigen.hpp"
#include "../support/gradient_check.hpp"
#include "sinew/backend/mix.hpp"
#include "sinew/backend/onednn.hpp"
#include "sinew/layers/group_norm.hpp"
#include "sinew/metrics/profile.hpp"
#include "sinew/nets/lenet5.hpp"
#include "sinew/nets/resnet.hpp"

namespace {
using namespace sinew;
using sinew::test::check_gradients;
using metrics::Direction;
using metrics::OpKind;

// The mixed backend (backend/mix.hpp) crosses a boundary in every case with a convolution or a dense layer:
// oneDNN's blocked or plain outputs into Eigen's NHWC ops and back, in both passes.
using EigenWithOneDnnConvAndDense =
    backend::Mix<backend::Eigen, backend::Use<layer_kind::conv2d, backend::OneDnn>, backend::Use<Dense<1>, backend::OneDnn>>;
using Backends = ::testing::Types<backend::OneDnn, backend::Eigen, EigenWithOneDnnConvAndDense>;
struct BackendName {
  template <class B>
  static std::string GetName(int) {
    std::string name(B::kName);  // "eigen+onednn" for the Mix: "eigen_onednn" in test names
    std::replace(name.begin(), name.end(), '+', '_');
    return name;
  }
};
template <class B>
class gradient : public ::testing::Test {};
TYPED_TEST_SUITE(gradient, Backends, BackendName);

template <class... L>
using Net = Sequential<L...>;

/// Whether every node of a lowered list (and of its Residual branches) goes to a declared profile kind, its
/// fused activation included: a layer whose time would land in "other" fails the build of this file.
template <class... N>
constexpr bool profiles_every_node(type_list<N...>);
template <class N>
constexpr bool profiles_node() {
  // A kProfile that the profile's table lacks is the layer's own kind, declared at run time (never "other"):
  // what is checked here at compile time is that a name of the table maps to a kind of both passes.
  bool ok = true;
  if constexpr (metrics::is_profile_kind(N::layer::kProfile))
    ok = backend::node_kind<N>(Direction::forward) != OpKind::other &&
         backend::node_kind<N>(Direction::backward) != OpKind::other_backward;
  if constexpr (!std::is_same_v<typename N::activation, NoActivation>)
    ok = ok && backend::activation_kind(backend::activation_of<typename N::activation>(), Direction::forward) !=
                   OpKind::other;
  if constexpr (requires { typename N::applied::template main_nodes<true>; })
    ok = ok && profiles_every_node(typename N::applied::template main_nodes<true>{}) &&
         profiles_every_node(typename N::applied::template shortcut_nodes<true>{});
  return ok;
}
template <class... N>
constexpr bool profiles_every_node(type_list<N...>) {
  return (true && ... && profiles_node<N>());
}

// One configuration, every check: SINEW_LAYER_CASE(test_name, (gradient check options), network type).
#define SINEW_LAYER_CASE(name, options, ...)                                                               \
  static_assert(profiles_every_node(__VA_ARGS__::nodes<true>{}), #name ": a node profiles as \"other\""); \
  TYPED_TEST(gradient, name) {                                                                             \
    EXPECT_GT((check_gradients<__VA_ARGS__, TypeParam>(test::GradientCheckOptions options)), 0);           \
  }                                                                                                        \
  TEST(onednn_vs_eigen, name) {                                                                           \
    test::expect_equivalent<__VA_ARGS__>({.input_scale = test::GradientCheckOptions options.input_scale}); \
  }

// clang-format off
SINEW_LAYER_CASE(conv2d_k3_s1_p1, ({}), Net<Input<3, 7, 7>, Conv2d<4, 3, 1, 1>>)
SINEW_LAYER_CASE(conv2d_k5_s1_p0, ({}), Net<Input<2, 9, 9>, Conv2d<3, 5>>)
SINEW_LAYER_CASE(conv2d_k3_s2_p1, ({}), Net<Input<3, 8, 8>, Conv2d<5, 3, 2, 1>>)
SINEW_LAYER_CASE(conv2d_k3_s2_p1_odd_5x4, ({}), Net<Input<3, 5, 4>, Conv2d<5, 3, 2, 1>>)
// Taps that only meet padding are dropped on oneDNN: their gradient must still be exactly zero, the others right.
SINEW_LAYER_CASE(conv2d_k3_p1_on_a_1x1_image, ({}), Net<Input<6, 1, 1>, Conv2d<5, 3, 1, 1>>)
SINEW_LAYER_CASE(conv2d_k3_s2_p1_from_2x2_to_1x1_without_bias, ({.seed = 4}), Net<Input<4, 2, 2>, Conv2d<5, 3, 2, 1, false>, ReLU>)
SINEW_LAYER_CASE(conv2d_trimmed_rows_kept_columns, ({}), Net<Input<3, 1, 6>, Conv2d<4, 3, 2, 1>>)
// On an image no larger than the kernel OneDnn runs the convolution as an inner product (onednn/small_conv2d.hpp).
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
SINEW_LAYER_CASE(conv2d_17_channels_k3_s1_p1_on_onednn_primitives, ({}), Net<Input<17, 5, 5>, Conv2d<4, 3, 1, 1>>)
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<5, 7, 9>, Conv2d<7, 5, 1, 2>>::nodes<true>>::type>,
                             backend::onednn::thin_conv2d_op>);
static_assert(std::is_same_v<backend::OneDnn::op<sinew::detail::last<Net<Input<17, 5, 5>, Conv2d<4, 3, 1, 1>>::nodes<true>>::type>,
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
SINEW_LAYER_CASE(max_pool_k2, ({}), Net<Input<3, 6, 6>, MaxPool<2>>)
SINEW_LAYER_CASE(max_pool_k3_s2_p1, ({}), Net<Input<3, 7, 7>, MaxPool<3, 2, 1>>)
SINEW_LAYER_CASE(avg_pool_k2, ({}), Net<Input<3, 6, 6>, AvgPool<2>>)
SINEW_LAYER_CASE(avg_pool_k3_s1_p1, ({}), Net<Input<2, 5, 5>, AvgPool<3, 1, 1>>)
SINEW_LAYER_CASE(avg_pool_k3_s2_p1, ({}), Net<Input<3, 7, 7>, AvgPool<3, 2, 1>>)
SINEW_LAYER_CASE(conv2d_pool_activation_unfused, ({}), Net<Input<2, 8, 8>, Conv2d<4, 3>, MaxPool<2>, Tanh, Flatten, Dense<3>>)
// BatchNorm2d: training (batch statistics; every output depends on the whole batch, and the harness
// recomputes the whole batch at each perturbation) and evaluation (running statistics), fused activations.
SINEW_LAYER_CASE(batch_norm2d_training_batch4, ({.batch = 4}), Net<Input<3, 4, 4>, BatchNorm2d>)
SINEW_LAYER_CASE(batch_norm2d_eval, ({.batch = 3, .training = false}), Net<Input<3, 4, 4>, Conv2d<4, 3, 1, 1>, BatchNorm2d>)
SINEW_LAYER_CASE(conv2d_batch_norm2d_fused_relu_training, ({.batch = 3, .seed = 3}), Net<Input<2, 5, 5>, Conv2d<16, 3, 1, 1, false>, BatchNorm2d, ReLU>)
SINEW_LAYER_CASE(batch_norm2d_fused_relu_eval, ({.batch = 3, .training = false}), Net<Input<2, 5, 5>, Conv2d<16, 3, 1, 1>, BatchNorm2d, ReLU>)
SINEW_LAYER_CASE(batch_norm2d_fused_tanh_training, ({.batch = 3}), Net<Input<3, 4, 4>, BatchNorm2d, Tanh>)
SINEW_LAYER_CASE(batch_norm2d_on_one_channel_plain_input, ({.batch = 3}), Net<Input<1, 4, 4>, BatchNorm2d, Sigmoid>)
SINEW_LAYER_CASE(batch_norm1d_after_dense_training, ({.batch = 5}), Net<Input<12, 1, 1>, Dense<6>, BatchNorm2d, Dense<3>>)
// Dropout: the gradient check replays step 0's mask; the equivalence compares OneDnn's mask element by element.
// After a 16-channel convolution oneDNN's output is blocked and Eigen's NHWC: the mask must follow the element.
SINEW_LAYER_CASE(dropout30_training_after_conv, ({.batch = 3}), Net<Input<2, 6, 6>, Conv2d<16, 3>, Dropout<30>>)
SINEW_LAYER_CASE(dropout50_eval_is_identity, ({.training = false}), Net<Input<2, 5, 5>, Conv2d<3, 3>, Dropout<>>)
SINEW_LAYER_CASE(dropout50_on_plain_input, ({}), Net<Input<3, 4, 5>, Dropout<>, Conv2d<4, 3>>)
SINEW_LAYER_CASE(dropout50_after_dense, ({.batch = 4}), Net<Input<12, 1, 1>, Dense<40>, Dropout<>, Dense<3>>)
// Adaptive and global average pooling: uniform, overlapping and replicating bins.
SINEW_LAYER_CASE(global_avg_pool_5x4, ({}), Net<Input<3, 5, 4>, GlobalAvgPool>)
SINEW_LAYER_CASE(global_avg_pool_after_conv_7x7, ({}), Net<Input<2, 7, 7>, Conv2d<16, 1>, GlobalAvgPool, Flatten, Dense<3>>)
SINEW_LAYER_CASE(adaptive_avg_pool_6x6_to_2x3_uniform, ({}), Net<Input<3, 6, 6>, AdaptiveAvgPool<2, 3>>)
SINEW_LAYER_CASE(adaptive_avg_pool_7x7_to_3x3_overlapping_bins, ({}), Net<Input<2, 7, 7>, Conv2d<16, 1>, AdaptiveAvgPool<3>>)
SINEW_LAYER_CASE(adaptive_avg_pool_5x7_to_3x4_uneven, ({}), Net<Input<3, 5, 7>, Conv2d<8, 1>, AdaptiveAvgPool<3, 4>>)
SINEW_LAYER_CASE(adaptive_avg_pool_1x1_to_6x6_replicates, ({}), Net<Input<4, 1, 1>, AdaptiveAvgPool<6>>)
SINEW_LAYER_CASE(adaptive_avg_pool_2x2_to_3x3_replicates_after_conv, ({}), Net<Input<2, 2, 2>, Conv2d<8, 1>, AdaptiveAvgPool<3>, Flatten, Dense<3>>)
// Heads of the zoo: ResNet's (BatchNorm, ReLU, global pool) and AlexNet's (1x1 -> 6x6, dropout). ReLU's kinks:
// a perturbed convolution weight moves a whole channel, and with seed 5 some output sits within h/16 of zero.
SINEW_LAYER_CASE(resnet_head_conv_bn_relu_gap_dense, ({.batch = 3, .seed = 6}), Net<Input<3, 6, 6>, Conv2d<8, 3, 1, 1, false>, BatchNorm2d, ReLU, GlobalAvgPool, Flatten, Dense<3>>)
SINEW_LAYER_CASE(alexnet_head_adaptive6_dropout_dense, ({.batch = 4, .seed = 9}), Net<Input<4, 1, 1>, AdaptiveAvgPool<6>, Flatten, Dropout<>, Dense<5>, ReLU>)
// Residual blocks: the adder on two tensors of the backend's layout, on a plain input beside a branch in the
// backend's layout (the first block of a network), and the projection shortcut; then the bottleneck.
SINEW_LAYER_CASE(residual_identity_shortcut, ({.batch = 3, .seed = 6}), Net<Input<4, 6, 6>, Residual<Chain<Conv2d<4, 3, 1, 1, false>, BatchNorm2d, ReLU, Conv2d<4, 3, 1, 1, false>, BatchNorm2d>>, ReLU, Flatten, Dense<3>>)
SINEW_LAYER_CASE(residual_after_conv_identity_shortcut, ({.batch = 3, .seed = 6}), Net<Input<3, 5, 5>, Conv2d<4, 3, 1, 1>, Residual<Chain<Conv2d<4, 3, 1, 1, false>, BatchNorm2d>>, ReLU, Flatten, Dense<3>>)
SINEW_LAYER_CASE(residual_projection_shortcut_stride2, ({.batch = 3, .seed = 6}), Net<Input<3, 6, 6>, Residual<Chain<Conv2d<8, 3, 2, 1, false>, BatchNorm2d, ReLU, Conv2d<8, 3, 1, 1, false>, BatchNorm2d>, ProjectIfNeeded<8, 2>>, ReLU, Flatten, Dense<3>>)
SINEW_LAYER_CASE(bottleneck_block, ({.batch = 3, .seed = 6}), Net<Input<8, 4, 4>, nets::Bottleneck<2, 1>, GlobalAvgPool, Flatten, Dense<3>>)
// SyncBatchNorm2d: in a Model of its own there is one worker, so its statistics are the batch's as BatchNorm2d's
// (the sums across workers are tested in tests/dist/test_buffers.cpp); its own passes on plain floats, on every
// backend, the activation after it a node of its own; inside a residual block as ConvertSyncBatchNorm puts it.
SINEW_LAYER_CASE(sync_batch_norm2d_training_batch4, ({.batch = 4}), Net<Input<3, 4, 4>, SyncBatchNorm2d>)
SINEW_LAYER_CASE(sync_batch_norm2d_eval_after_conv, ({.batch = 3, .training = false}), Net<Input<2, 4, 4>, Conv2d<4, 3, 1, 1>, SyncBatchNorm2d>)
SINEW_LAYER_CASE(conv2d_sync_batch_norm2d_relu_dense_training, ({.batch = 3, .seed = 3}), Net<Input<2, 5, 5>, Conv2d<8, 3, 1, 1, false>, SyncBatchNorm2d, ReLU, Flatten, Dense<3>>)
SINEW_LAYER_CASE(residual_projection_shortcut_with_sync_batch_norm, ({.batch = 3, .seed = 6}), ConvertSyncBatchNorm<Net<Input<3, 6, 6>, Residual<Chain<Conv2d<8, 3, 2, 1, false>, BatchNorm2d, ReLU, Conv2d<8, 3, 1, 1, false>, BatchNorm2d>, ProjectIfNeeded<8, 2>>, ReLU, Flatten, Dense<3>>>)
// GroupNorm: statistics per sample and group (a batch of one suffices), on a plain input, after a convolution
// (oneDNN's blocked output, Eigen's NHWC), in evaluation mode (the same function), and on a flat input.
SINEW_LAYER_CASE(group_norm_2_groups_batch_1, ({.batch = 1}), Net<Input<4, 3, 3>, GroupNorm<2>>)
SINEW_LAYER_CASE(group_norm_4_groups_after_conv_then_tanh, ({.batch = 3, .seed = 5}), Net<Input<2, 5, 5>, Conv2d<16, 3, 1, 1>, GroupNorm<4>, Tanh>)
SINEW_LAYER_CASE(group_norm_a_group_per_channel_eval_then_conv, ({.training = false}), Net<Input<3, 4, 4>, GroupNorm<3>, Conv2d<4, 3>>)
SINEW_LAYER_CASE(group_norm_on_flat_input_after_dense, ({.batch = 3}), Net<Input<12, 1, 1>, Dense<6>, GroupNorm<2>, Dense<3>>)
SINEW_LAYER_CASE(lenet5_1x32x32, ({.batch = 3, .samples = 60}), nets::LeNet5<Input<1, 32, 32>>)
SINEW_LAYER_CASE(lenet5_3x32x32, ({.batch = 2}), nets::LeNet5<Input<3, 32, 32>>)
// clang-format on

// GroupNorm's forward against values computed here, on every backend (each runs the layer's own passes).
template <class B>
class group_norm : public ::testing::Test {};
TYPED_TEST_SUITE(group_norm, Backends, BackendName);

// With gamma 1 and beta 0 (PyTorch's initialisation) each (sample, group) comes out as (x - mean) / sqrt(var +
// eps) of its own 2 channels x 3 x 2 values, so with mean 0 and variance 1.
TYPED_TEST(group_norm, normalises_each_sample_and_group_to_mean_0_and_variance_1) {
  using N = Net<Input<6, 3, 2>, GroupNorm<3>>;
  typename TypeParam::context ctx({.threads = 2});
  Model<N, TypeParam> model(ctx);
  Rng rng(5);
  std::vector<float> x(3 * N::input_shape::kSize);
  for (float& v : x) v = 3 * rng.normal() + 2;
  const auto y = model.forward(x, 3);
  constexpr std::size_t kGroup = 2 * 3 * 2;
  for (std::size_t group = 0; group < 3 * 3; ++group) {
    double mean = 0, var = 0, out_mean = 0, out_var = 0;
    for (std::size_t i = 0; i < kGroup; ++i) mean += x[group * kGroup + i] / double(kGroup);
    for (std::size_t i = 0; i < kGroup; ++i) var += std::pow(x[group * kGroup + i] - mean, 2) / double(kGroup);
    for (std::size_t i = 0; i < kGroup; ++i) {
      const double expected = (x[group * kGroup + i] - mean) / std::sqrt(var + 1e-5);
      EXPECT_NEAR(y[group * kGroup + i], expected, 1e-5) << "group " << group << ", value " << i;
      out_mean += y[group * kGroup + i] / double(kGroup);
    }
    for (std::size_t i = 0; i < kGroup; ++i) out_var += std::pow(y[group * kGroup + i] - out_mean, 2) / double(kGroup);
    EXPECT_NEAR(out_mean, 0.0, 1e-6) << "group " << group;
    EXPECT_NEAR(out_var, 1.0, 1e-4) << "group " << group;
  }
}

// One group of 2 channels x 1 x 2: [1, 2 | 3, 4] has mean 2.5 and variance 1.25, so x_hat = [-1.5, -0.5, 0.5, 1.5] /
// sqrt(1.25 + 1e-5); gamma [2, -1] and beta [0.5, 1] act per channel. A constant sample has variance 0: eps keeps
// it finite and the output is beta.
TYPED_TEST(group_norm, matches_a_case_computed_by_hand) {
  using N = Net<Input<2, 1, 2>, GroupNorm<1>>;
  typename TypeParam::context ctx({.threads = 1});
  Model<N, TypeParam> model(ctx);
  const std::vector<float> params{2.0f, -1.0f, 0.5f, 1.0f};  // [gamma | beta]
  std::copy(params.begin(), params.end(), model.parameters().begin());
  const std::vector<float> x{1, 2, 3, 4, 5, 5, 5, 5};
  const auto y = model.forward(x, 2);
  const std::vector<float> expected{-2.18327084f, -0.39442361f, 0.55278819f, -0.34163542f, 0.5f, 0.5f, 1.0f, 1.0f};
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(y[i], expected[i], 1e-5f) << i;
}

// Its time goes to the kind its header names, declared by the profile at first use.
TYPED_TEST(group_norm, profiles_under_the_kind_its_header_declares) {
  using N = Net<Input<4, 3, 3>, Conv2d<4, 3, 1, 1>, GroupNorm<2>, Flatten, Dense<3>>;
  typename TypeParam::context ctx({.threads = 2});
  Model<N, TypeParam, metrics::OperatorProfile> model(ctx);
  std::vector<float> x(2 * N::input_shape::kSize, 0.25f);
  for (std::size_t i = 0; i < x.size(); i += 3) x[i] = -0.5f;
  model.forward(x, 2);
  model.loss(std::vector<std::int32_t>{0, 2});
  model.backward();
  const auto kinds = model.profile().by_kind();
  EXPECT_TRUE(kinds.count("group_norm"));
  EXPECT_TRUE(kinds.count("group_norm_backward"));
  EXPECT_EQ(model.profile().total(OpKind::other).calls, 0u);
  EXPECT_EQ(model.profile().total(OpKind::other_backward).calls, 0u);
}

// SyncBatchNorm2d in a Model of its own (one worker) computes BatchNorm2d: outputs, gradients of parameters and
// input, running statistics after two training passes, then evaluation with them, within rounding.
template <class B>
class sync_batch_norm : public ::testing::Test {};
TYPED_TEST_SUITE(sync_batch_norm, Backends, BackendName);
TYPED_TEST(sync_batch_norm, on_one_worker_equals_batch_norm2d) {
  using Plain = Net<Input<3, 5, 5>, Conv2d<6, 3, 1, 1>, BatchNorm2d, ReLU, Flatten, Dense<4>>;
  using Sync = ConvertSyncBatchNorm<Plain>;
  static_assert(Model<Sync, TypeParam>::kSumsOverWorkers && !Model<Plain, TypeParam>::kSumsOverWorkers);
  typename TypeParam::context ctx({.threads = 2});
  Model<Plain, TypeParam> plain(ctx, {.seed = 9, .input_gradient = true});
  Model<Sync, TypeParam> sync(ctx, {.seed = 9, .input_gradient = true});
  Rng rng(4);
  std::vector<float> x(5 * Plain::input_shape::kSize);
  for (float& v : x) v = 2 * rng.normal() + 1;
  const std::vector<std::int32_t> labels{0, 3, 1, 2, 1};
  const auto close = [](std::span<const float> a, std::span<const float> b, const char* what) {
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i)
      EXPECT_NEAR(a[i], b[i], 2e-5f * std::max(1.0f, std::abs(b[i]))) << what << " [" << i << "]";
  };
  for (int pass = 0; pass < 2; ++pass) {
    const auto ys = sync.forward(x, 5);
    const std::vector<float> y_sync(ys.begin(), ys.end());
    close(y_sync, plain.forward(x, 5), "output");
    sync.loss(labels), plain.loss(labels);
    sync.backward(), plain.backward();
    close(sync.gradients(), plain.gradients(), "parameter gradients");
    close(sync.input_gradient(), plain.input_gradient(), "input gradient");
    close(sync.buffers(), plain.buffers(), "running statistics");
  }
  EXPECT_NE(sync.buffers()[0], 0.0f) << "training must have moved the running mean";
  sync.set_training(false), plain.set_training(false);
  const auto ys = sync.forward(x, 5);
  const std::vector<float> y_sync(ys.begin(), ys.end());
  close(y_sync, plain.forward(x, 5), "evaluation output");
}

// One training step with the per-operator profile on a net of every layer kind (activations fused and on their
// own): each node's time lands in the kind its layer declares, none in "other".
template <class B>
class profile : public ::testing::Test {};
TYPED_TEST_SUITE(profile, Backends, BackendName);
TYPED_TEST(profile, every_layer_kind_goes_to_its_declared_kind) {
  using N = Net<Input<3, 6, 6>, Conv2d<4, 3, 1, 1>, BatchNorm2d, ReLU, MaxPool<2>, Tanh, Dropout<>, ReLU,
                Residual<Chain<Conv2d<4, 1>>>, AdaptiveAvgPool<2>, AvgPool<2>, Sigmoid, GlobalAvgPool, LeakyReLU, Flatten,
                Dense<3>, Sigmoid>;
  typename TypeParam::context ctx({.threads = 2});
  Model<N, TypeParam, metrics::OperatorProfile> model(ctx);
  std::vector<float> x(2 * N::input_shape::kSize, 0.25f);
  const std::vector<std::int32_t> y{0, 2};
  model.forward(x, 2);
  model.loss(y);
  model.backward();
  const auto& p = model.profile();
  EXPECT_EQ(p.total(OpKind::other).calls, 0u);
  EXPECT_EQ(p.total(OpKind::other_backward).calls, 0u);
  for (const OpKind k : {OpKind::convolution, OpKind::batch_norm, OpKind::relu, OpKind::pooling, OpKind::tanh,
                         OpKind::dropout, OpKind::add, OpKind::sigmoid, OpKind::flatten, OpKind::fully_connected})
    EXPECT_GT(p.total(k).calls, 0u) << metrics::op_kind_name(k);
}

}  // namespace
