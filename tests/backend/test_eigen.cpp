// The Eigen backend: every layer it implements through the numerical-gradient harness (gradient_eigen.*),
// and the same networks on OneDnn and Eigen from the same seed giving the same outputs, parameter gradients
// and input gradients (equivalence.*), which checks the NHWC layout, the PyTorch weight layout, padding and
// the flatten order against an independent implementation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "sinew/backend/eigen.hpp"  // first: EIGEN_USE_THREADS before any Tensor include
#include "../support/equivalence.hpp"
#include "../support/gradient_check.hpp"
#include "sinew/backend/onednn.hpp"
#include "sinew/model.hpp"
#include "sinew/nets/lenet5.hpp"
#include "sinew/nets/resnet.hpp"

namespace {
using namespace sinew;
using sinew::test::check_gradients;
using OneDnn = backend::OneDnn;
using EigenB = backend::Eigen;

template <class... L>
using Net = Sequential<L...>;

template <class N>
void expect_equivalent(int batch = 3, std::uint64_t seed = 5, int eigen_threads = 0) {
  test::expect_equivalent<N>({.batch = batch, .seed = seed, .eigen_threads = eigen_threads});
}

// One configuration, both checks: SINEW_EIGEN_CASE(test_name, (gradient check options), network type).
#define SINEW_EIGEN_CASE(name, options, ...)                                          \
  TEST(gradient_eigen, name) {                                                        \
    EXPECT_GT((check_gradients<__VA_ARGS__, EigenB>(test::GradientCheckOptions options)), 0); \
  }                                                                                   \
  TEST(equivalence, name) { expect_equivalent<__VA_ARGS__>(); }

// clang-format off
SINEW_EIGEN_CASE(conv2d_k3_s1_p1, ({}), Net<Input<3, 7, 7>, Conv2d<4, 3, 1, 1>>)
SINEW_EIGEN_CASE(conv2d_k5_s1_p0, ({}), Net<Input<2, 9, 9>, Conv2d<3, 5>>)
SINEW_EIGEN_CASE(conv2d_k3_s2_p1, ({}), Net<Input<3, 8, 8>, Conv2d<5, 3, 2, 1>>)
SINEW_EIGEN_CASE(conv2d_k3_s2_p1_odd_5x4, ({}), Net<Input<3, 5, 4>, Conv2d<5, 3, 2, 1>>)
SINEW_EIGEN_CASE(conv2d_without_bias, ({}), Net<Input<2, 6, 6>, Conv2d<4, 3, 1, 1, false>>)
SINEW_EIGEN_CASE(conv2d_fused_tanh, ({}), Net<Input<2, 6, 6>, Conv2d<3, 3>, Tanh>)
SINEW_EIGEN_CASE(conv2d_fused_relu, ({.seed = 11}), Net<Input<2, 6, 6>, Conv2d<3, 3, 1, 1>, ReLU>)
SINEW_EIGEN_CASE(conv2d_fused_sigmoid, ({}), Net<Input<2, 6, 6>, Conv2d<3, 3>, Sigmoid>)
SINEW_EIGEN_CASE(conv2d_16_channels_k3_s1_p1, ({}), Net<Input<16, 5, 5>, Conv2d<16, 3, 1, 1>>)
SINEW_EIGEN_CASE(dense_on_flat_input, ({}), Net<Input<12, 1, 1>, Dense<5>>)
SINEW_EIGEN_CASE(dense_fused_tanh, ({}), Net<Input<12, 1, 1>, Dense<5>, Tanh>)
SINEW_EIGEN_CASE(dense_without_bias, ({}), Net<Input<7, 1, 1>, Dense<3, false>>)
SINEW_EIGEN_CASE(flatten_then_dense, ({}), Net<Input<2, 3, 3>, Flatten, Dense<4>>)
SINEW_EIGEN_CASE(conv2d_flatten_dense, ({}), Net<Input<2, 6, 6>, Conv2d<9, 3>, Flatten, Dense<4>>)
SINEW_EIGEN_CASE(relu, ({}), Net<Input<2, 5, 5>, ReLU>)
SINEW_EIGEN_CASE(tanh, ({}), Net<Input<2, 5, 5>, Tanh>)
SINEW_EIGEN_CASE(sigmoid, ({}), Net<Input<2, 5, 5>, Sigmoid>)
SINEW_EIGEN_CASE(max_pool_k2, ({}), Net<Input<3, 6, 6>, MaxPool<2>>)
SINEW_EIGEN_CASE(max_pool_k3_s2_p1, ({}), Net<Input<3, 7, 7>, MaxPool<3, 2, 1>>)
SINEW_EIGEN_CASE(avg_pool_k2, ({}), Net<Input<3, 6, 6>, AvgPool<2>>)
SINEW_EIGEN_CASE(avg_pool_k3_s1_p1, ({}), Net<Input<2, 5, 5>, AvgPool<3, 1, 1>>)
SINEW_EIGEN_CASE(avg_pool_k3_s2_p1, ({}), Net<Input<3, 7, 7>, AvgPool<3, 2, 1>>)
SINEW_EIGEN_CASE(conv2d_pool_activation_unfused, ({}), Net<Input<2, 8, 8>, Conv2d<4, 3>, MaxPool<2>, Tanh, Flatten, Dense<3>>)
// BatchNorm2d: training (batch statistics; every output depends on the whole batch, and the harness
// recomputes the whole batch at each perturbation) and evaluation (running statistics), fused activations.
SINEW_EIGEN_CASE(batch_norm2d_training_batch4, ({.batch = 4}), Net<Input<3, 4, 4>, BatchNorm2d>)
SINEW_EIGEN_CASE(batch_norm2d_eval, ({.batch = 3, .training = false}), Net<Input<3, 4, 4>, Conv2d<4, 3, 1, 1>, BatchNorm2d>)
SINEW_EIGEN_CASE(conv2d_batch_norm2d_fused_relu_training, ({.batch = 3, .seed = 3}), Net<Input<2, 5, 5>, Conv2d<16, 3, 1, 1, false>, BatchNorm2d, ReLU>)
SINEW_EIGEN_CASE(batch_norm2d_fused_relu_eval, ({.batch = 3, .training = false}), Net<Input<2, 5, 5>, Conv2d<16, 3, 1, 1>, BatchNorm2d, ReLU>)
SINEW_EIGEN_CASE(batch_norm2d_fused_tanh_training, ({.batch = 3}), Net<Input<3, 4, 4>, BatchNorm2d, Tanh>)
SINEW_EIGEN_CASE(batch_norm2d_on_one_channel_plain_input, ({.batch = 3}), Net<Input<1, 4, 4>, BatchNorm2d, Sigmoid>)
SINEW_EIGEN_CASE(batch_norm1d_after_dense_training, ({.batch = 5}), Net<Input<12, 1, 1>, Dense<6>, BatchNorm2d, Dense<3>>)
// Dropout: the gradient check replays step 0's mask; the equivalence compares OneDnn's mask element by element.
// After a 16-channel convolution oneDNN's output is blocked and Eigen's NHWC: the mask must follow the element.
SINEW_EIGEN_CASE(dropout30_training_after_conv, ({.batch = 3}), Net<Input<2, 6, 6>, Conv2d<16, 3>, Dropout<30>>)
SINEW_EIGEN_CASE(dropout50_eval_is_identity, ({.training = false}), Net<Input<2, 5, 5>, Conv2d<3, 3>, Dropout<>>)
SINEW_EIGEN_CASE(dropout50_on_plain_input, ({}), Net<Input<3, 4, 5>, Dropout<>, Conv2d<4, 3>>)
SINEW_EIGEN_CASE(dropout50_after_dense, ({.batch = 4}), Net<Input<12, 1, 1>, Dense<40>, Dropout<>, Dense<3>>)
// Adaptive and global average pooling: uniform, overlapping and replicating bins.
SINEW_EIGEN_CASE(global_avg_pool_5x4, ({}), Net<Input<3, 5, 4>, GlobalAvgPool>)
SINEW_EIGEN_CASE(global_avg_pool_after_conv_7x7, ({}), Net<Input<2, 7, 7>, Conv2d<16, 1>, GlobalAvgPool, Flatten, Dense<3>>)
SINEW_EIGEN_CASE(adaptive_avg_pool_6x6_to_2x3_uniform, ({}), Net<Input<3, 6, 6>, AdaptiveAvgPool<2, 3>>)
SINEW_EIGEN_CASE(adaptive_avg_pool_7x7_to_3x3_overlapping_bins, ({}), Net<Input<2, 7, 7>, Conv2d<16, 1>, AdaptiveAvgPool<3>>)
SINEW_EIGEN_CASE(adaptive_avg_pool_5x7_to_3x4_uneven, ({}), Net<Input<3, 5, 7>, Conv2d<8, 1>, AdaptiveAvgPool<3, 4>>)
SINEW_EIGEN_CASE(adaptive_avg_pool_1x1_to_6x6_replicates, ({}), Net<Input<4, 1, 1>, AdaptiveAvgPool<6>>)
SINEW_EIGEN_CASE(adaptive_avg_pool_2x2_to_3x3_replicates_after_conv, ({}), Net<Input<2, 2, 2>, Conv2d<8, 1>, AdaptiveAvgPool<3>, Flatten, Dense<3>>)
// Heads of the zoo: ResNet's (BatchNorm, ReLU, global pool) and AlexNet's (1x1 -> 6x6, dropout).
SINEW_EIGEN_CASE(resnet_head_conv_bn_relu_gap_dense, ({.batch = 3, .seed = 6}), Net<Input<3, 6, 6>, Conv2d<8, 3, 1, 1, false>, BatchNorm2d, ReLU, GlobalAvgPool, Flatten, Dense<3>>)
SINEW_EIGEN_CASE(alexnet_head_adaptive6_dropout_dense, ({.batch = 3, .seed = 9}), Net<Input<4, 1, 1>, AdaptiveAvgPool<6>, Flatten, Dropout<>, Dense<5>, ReLU>)
// Residual blocks: the adder on two NHWC tensors, on a plain input beside an NHWC branch (the first block of
// a network), and the projection shortcut; then the bottleneck.
SINEW_EIGEN_CASE(residual_identity_shortcut, ({.batch = 3, .seed = 6}), Net<Input<4, 6, 6>, Residual<Chain<Conv2d<4, 3, 1, 1, false>, BatchNorm2d, ReLU, Conv2d<4, 3, 1, 1, false>, BatchNorm2d>>, ReLU, Flatten, Dense<3>>)
SINEW_EIGEN_CASE(residual_after_conv_identity_shortcut, ({.batch = 3, .seed = 6}), Net<Input<3, 5, 5>, Conv2d<4, 3, 1, 1>, Residual<Chain<Conv2d<4, 3, 1, 1, false>, BatchNorm2d>>, ReLU, Flatten, Dense<3>>)
SINEW_EIGEN_CASE(residual_projection_shortcut_stride2, ({.batch = 3, .seed = 6}), Net<Input<3, 6, 6>, Residual<Chain<Conv2d<8, 3, 2, 1, false>, BatchNorm2d, ReLU, Conv2d<8, 3, 1, 1, false>, BatchNorm2d>, ProjectIfNeeded<8, 2>>, ReLU, Flatten, Dense<3>>)
SINEW_EIGEN_CASE(bottleneck_block, ({.batch = 3, .seed = 6}), Net<Input<8, 4, 4>, nets::Bottleneck<2, 1>, GlobalAvgPool, Flatten, Dense<3>>)
SINEW_EIGEN_CASE(lenet5_1x32x32, ({.batch = 3, .samples = 60}), nets::LeNet5<Input<1, 32, 32>>)
SINEW_EIGEN_CASE(lenet5_3x32x32, ({.batch = 2}), nets::LeNet5<Input<3, 32, 32>>)
// clang-format on

TEST(equivalence, lenet5_batch64) { expect_equivalent<nets::LeNet5<Input<3, 32, 32>>>(64, 3); }
// More pool threads than cores: every parallelFor splits into many ranges, so range arithmetic is exercised.
TEST(equivalence, lenet5_batch5_eigen_7_threads) { expect_equivalent<nets::LeNet5<Input<3, 32, 32>>>(5, 4, 7); }
TEST(equivalence, conv2d_k3_s2_p1_eigen_1_thread) {
  expect_equivalent<Net<Input<3, 8, 8>, Conv2d<5, 3, 2, 1>, ReLU, MaxPool<3, 2, 1>>>(4, 5, 1);
}

TEST(eigen_context, threads_default_to_the_hardware_and_follow_the_option) {
  EigenB::context all{BackendOptions{}};
  EXPECT_GE(all.threads(), 1);
  EigenB::context three{BackendOptions{.threads = 3}};
  EXPECT_EQ(three.threads(), 3);
}

TEST(eigen_layout, nhwc_and_nchw_are_the_same_descriptor_for_one_channel_or_one_pixel) {
  using backend::eigen::layout;
  using backend::eigen::make_desc;
  EXPECT_EQ(make_desc(2, 1, 4, 4, layout::nhwc), EigenB::plain_desc(2, 1, 4, 4));
  EXPECT_EQ(make_desc(2, 8, 1, 1, layout::nhwc), EigenB::plain_desc(2, 8, 1, 1));
  EXPECT_NE(make_desc(2, 3, 4, 4, layout::nhwc), EigenB::plain_desc(2, 3, 4, 4));
}

TEST(eigen_forward, short_last_batch_uses_its_own_plan) {
  using N = Net<Input<2, 6, 6>, Conv2d<4, 3>, Tanh, Flatten, Dense<3>>;
  EigenB::context ctx{BackendOptions{}};
  Model<N, EigenB> model(ctx, ModelOptions{.seed = 5});
  Rng rng(9);
  std::vector<float> x(3 * 72);
  for (float& v : x) v = rng.normal();
  const auto full_span = model.forward(x, 3);
  const std::vector<float> full(full_span.begin(), full_span.end());
  const auto one = model.forward(std::span<const float>(x).first(72), 1);
  // Eigen's contraction blocks by size, so the summation order (not the result) may differ by batch.
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(one[i], full[i], 1e-6f * std::max(1.0f, std::fabs(full[i])));
}

}  // namespace
