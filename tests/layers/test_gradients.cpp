// Every layer, fused pair and LeNet-5 through the numerical-gradient harness, on each backend.
#include <gtest/gtest.h>

#include "../support/gradient_check.hpp"
#include "sinew/backend/onednn.hpp"
#include "sinew/nets/lenet5.hpp"
#include "sinew/nets/resnet.hpp"

namespace {
using namespace sinew;
using sinew::test::check_gradients;
using OneDnn = backend::OneDnn;

template <class... L>
using Net = Sequential<L...>;

TEST(gradient_onednn, conv2d_k3_s1_p1) { EXPECT_GT((check_gradients<Net<Input<3, 7, 7>, Conv2d<4, 3, 1, 1>>, OneDnn>()), 0); }
TEST(gradient_onednn, conv2d_k5_s1_p0) { EXPECT_GT((check_gradients<Net<Input<2, 9, 9>, Conv2d<3, 5>>, OneDnn>()), 0); }
TEST(gradient_onednn, conv2d_k3_s2_p1) { EXPECT_GT((check_gradients<Net<Input<3, 8, 8>, Conv2d<5, 3, 2, 1>>, OneDnn>()), 0); }
// Taps that only meet padding are dropped on oneDNN: their gradient must still be exactly zero, the others right.
TEST(gradient_onednn, conv2d_k3_p1_on_a_1x1_image) {
  EXPECT_GT((check_gradients<Net<Input<6, 1, 1>, Conv2d<5, 3, 1, 1>>, OneDnn>()), 0);
}
TEST(gradient_onednn, conv2d_k3_s2_p1_from_2x2_to_1x1_without_bias) {
  EXPECT_GT((check_gradients<Net<Input<4, 2, 2>, Conv2d<5, 3, 2, 1, false>, ReLU>, OneDnn>({.seed = 4})), 0);
}
TEST(gradient_onednn, conv2d_trimmed_rows_kept_columns) {
  EXPECT_GT((check_gradients<Net<Input<3, 1, 6>, Conv2d<4, 3, 2, 1>>, OneDnn>()), 0);
}
// On an image no larger than the kernel the convolution runs as an inner product (onednn/small_conv2d.hpp).
TEST(gradient_onednn, conv2d_k3_p1_on_a_2x2_image_as_inner_product) {
  using Node = sinew::detail::last<Sequential<Input<3, 2, 2>, Conv2d<4, 3, 1, 1>>::nodes<true>>::type;
  static_assert(std::is_same_v<OneDnn::op<Node>, backend::onednn::small_conv2d_op>);
  EXPECT_GT((check_gradients<Net<Input<3, 2, 2>, Conv2d<4, 3, 1, 1>>, OneDnn>()), 0);
}
TEST(gradient_onednn, conv2d_k3_p1_on_a_3x2_image_fused_relu_without_bias) {
  EXPECT_GT((check_gradients<Net<Input<3, 3, 2>, Conv2d<5, 3, 1, 1, false>, ReLU>, OneDnn>({.seed = 6})), 0);
}
TEST(gradient_onednn, conv2d_k3_s2_p1_3x3_to_2x2_then_batch_norm) {
  EXPECT_GT((check_gradients<Net<Input<2, 3, 3>, Conv2d<4, 3, 2, 1>, BatchNorm2d>, OneDnn>({.batch = 3})), 0);
}
TEST(gradient_onednn, conv2d_without_bias) {
  EXPECT_GT((check_gradients<Net<Input<2, 6, 6>, Conv2d<4, 3, 1, 1, false>>, OneDnn>()), 0);
}
TEST(gradient_onednn, conv2d_fused_tanh) { EXPECT_GT((check_gradients<Net<Input<2, 6, 6>, Conv2d<3, 3>, Tanh>, OneDnn>()), 0); }
TEST(gradient_onednn, conv2d_fused_relu) {
  EXPECT_GT((check_gradients<Net<Input<2, 6, 6>, Conv2d<3, 3, 1, 1>, ReLU>, OneDnn>({.seed = 11})), 0);
}
TEST(gradient_onednn, conv2d_fused_sigmoid) {
  EXPECT_GT((check_gradients<Net<Input<2, 6, 6>, Conv2d<3, 3>, Sigmoid>, OneDnn>()), 0);
}
TEST(gradient_onednn, dense_on_flat_input) { EXPECT_GT((check_gradients<Net<Input<12, 1, 1>, Dense<5>>, OneDnn>()), 0); }
TEST(gradient_onednn, dense_fused_tanh) { EXPECT_GT((check_gradients<Net<Input<12, 1, 1>, Dense<5>, Tanh>, OneDnn>()), 0); }
TEST(gradient_onednn, dense_without_bias) {
  EXPECT_GT((check_gradients<Net<Input<7, 1, 1>, Dense<3, false>>, OneDnn>()), 0);
}
TEST(gradient_onednn, flatten_then_dense) {
  EXPECT_GT((check_gradients<Net<Input<2, 3, 3>, Flatten, Dense<4>>, OneDnn>()), 0);
}
TEST(gradient_onednn, conv2d_flatten_dense) {
  EXPECT_GT((check_gradients<Net<Input<2, 6, 6>, Conv2d<9, 3>, Flatten, Dense<4>>, OneDnn>()), 0);
}
TEST(gradient_onednn, relu) { EXPECT_GT((check_gradients<Net<Input<2, 5, 5>, ReLU>, OneDnn>()), 0); }
TEST(gradient_onednn, tanh) { EXPECT_GT((check_gradients<Net<Input<2, 5, 5>, Tanh>, OneDnn>()), 0); }
TEST(gradient_onednn, sigmoid) { EXPECT_GT((check_gradients<Net<Input<2, 5, 5>, Sigmoid>, OneDnn>()), 0); }
TEST(gradient_onednn, max_pool_k2) { EXPECT_GT((check_gradients<Net<Input<3, 6, 6>, MaxPool<2>>, OneDnn>()), 0); }
TEST(gradient_onednn, max_pool_k3_s2_p1) {
  EXPECT_GT((check_gradients<Net<Input<3, 7, 7>, MaxPool<3, 2, 1>>, OneDnn>()), 0);
}
TEST(gradient_onednn, avg_pool_k2) { EXPECT_GT((check_gradients<Net<Input<3, 6, 6>, AvgPool<2>>, OneDnn>()), 0); }
TEST(gradient_onednn, avg_pool_k3_s1_p1) {
  EXPECT_GT((check_gradients<Net<Input<2, 5, 5>, AvgPool<3, 1, 1>>, OneDnn>()), 0);
}
TEST(gradient_onednn, conv2d_pool_activation_unfused) {
  EXPECT_GT((check_gradients<Net<Input<2, 8, 8>, Conv2d<4, 3>, MaxPool<2>, Tanh, Flatten, Dense<3>>, OneDnn>()), 0);
}
// BatchNorm2d in training mode: the batch statistics make every output a function of the whole batch; the
// harness recomputes the whole batch at each perturbation, so the check covers that coupling.
TEST(gradient_onednn, batch_norm2d_training_batch4) {
  EXPECT_GT((check_gradients<Net<Input<3, 4, 4>, BatchNorm2d>, OneDnn>({.batch = 4})), 0);
}
TEST(gradient_onednn, batch_norm2d_eval) {
  EXPECT_GT((check_gradients<Net<Input<3, 4, 4>, Conv2d<4, 3, 1, 1>, BatchNorm2d>, OneDnn>({.batch = 3, .training = false})), 0);
}
TEST(gradient_onednn, conv2d_batch_norm2d_fused_relu_training) {
  EXPECT_GT((check_gradients<Net<Input<2, 5, 5>, Conv2d<16, 3, 1, 1, false>, BatchNorm2d, ReLU>, OneDnn>({.batch = 3, .seed = 3})), 0);
}
TEST(gradient_onednn, batch_norm2d_fused_relu_eval) {
  EXPECT_GT((check_gradients<Net<Input<2, 5, 5>, Conv2d<16, 3, 1, 1>, BatchNorm2d, ReLU>, OneDnn>({.batch = 3, .training = false})), 0);
}
TEST(gradient_onednn, batch_norm2d_fused_tanh_training) {
  EXPECT_GT((check_gradients<Net<Input<3, 4, 4>, BatchNorm2d, Tanh>, OneDnn>({.batch = 3})), 0);
}
TEST(gradient_onednn, batch_norm1d_after_dense_training) {
  EXPECT_GT((check_gradients<Net<Input<12, 1, 1>, Dense<6>, BatchNorm2d, Dense<3>>, OneDnn>({.batch = 5})), 0);
}
TEST(gradient_onednn, dropout30_training_after_conv) {
  EXPECT_GT((check_gradients<Net<Input<2, 6, 6>, Conv2d<16, 3>, Dropout<30>>, OneDnn>({.batch = 3})), 0);
}
TEST(gradient_onednn, dropout50_eval_is_identity) {
  EXPECT_GT((check_gradients<Net<Input<2, 5, 5>, Conv2d<3, 3>, Dropout<>>, OneDnn>({.training = false})), 0);
}
TEST(gradient_onednn, global_avg_pool_5x4) {
  EXPECT_GT((check_gradients<Net<Input<3, 5, 4>, GlobalAvgPool>, OneDnn>()), 0);
}
TEST(gradient_onednn, adaptive_avg_pool_6x6_to_2x3_uniform) {
  EXPECT_GT((check_gradients<Net<Input<3, 6, 6>, AdaptiveAvgPool<2, 3>>, OneDnn>()), 0);
}
TEST(gradient_onednn, adaptive_avg_pool_7x7_to_3x3_overlapping_bins) {
  EXPECT_GT((check_gradients<Net<Input<2, 7, 7>, Conv2d<16, 1>, AdaptiveAvgPool<3>>, OneDnn>()), 0);
}
TEST(gradient_onednn, adaptive_avg_pool_1x1_to_6x6_replicates) {
  EXPECT_GT((check_gradients<Net<Input<4, 1, 1>, AdaptiveAvgPool<6>>, OneDnn>()), 0);
}
// ReLU's kinks: a perturbed convolution weight moves a whole channel, and with seed 5 some output sits within
// h/16 of zero (the conv2d + ReLU pair alone fails there too), so the seed is 6.
TEST(gradient_onednn, resnet_head_conv_bn_relu_gap_dense) {
  EXPECT_GT((check_gradients<Net<Input<3, 6, 6>, Conv2d<8, 3, 1, 1, false>, BatchNorm2d, ReLU, GlobalAvgPool, Flatten,
                                 Dense<3>>,
                             OneDnn>({.batch = 3, .seed = 6})),
            0);
}
TEST(gradient_onednn, alexnet_head_adaptive6_dropout_dense) {
  EXPECT_GT((check_gradients<Net<Input<4, 1, 1>, AdaptiveAvgPool<6>, Flatten, Dropout<>, Dense<5>, ReLU>, OneDnn>(
                {.batch = 3, .seed = 9})),
            0);
}

TEST(gradient_onednn, lenet5_1x32x32) {
  EXPECT_GT((check_gradients<nets::LeNet5<Input<1, 32, 32>>, OneDnn>({.batch = 3, .samples = 60})), 0);
}

}  // namespace

namespace {
using namespace sinew;
using sinew::test::check_gradients;

TEST(gradient_onednn, residual_identity_shortcut) {
  using Net = Sequential<Input<4, 6, 6>,
                         Residual<Chain<Conv2d<4, 3, 1, 1, false>, BatchNorm2d, ReLU, Conv2d<4, 3, 1, 1, false>, BatchNorm2d>>,
                         ReLU, Flatten, Dense<3>>;
  EXPECT_GT((check_gradients<Net, backend::OneDnn>({.batch = 3, .seed = 6})), 0);
}
TEST(gradient_onednn, residual_projection_shortcut_stride2) {
  using Net = Sequential<Input<3, 6, 6>,
                         Residual<Chain<Conv2d<8, 3, 2, 1, false>, BatchNorm2d, ReLU, Conv2d<8, 3, 1, 1, false>, BatchNorm2d>,
                                  ProjectIfNeeded<8, 2>>,
                         ReLU, Flatten, Dense<3>>;
  EXPECT_GT((check_gradients<Net, backend::OneDnn>({.batch = 3, .seed = 6})), 0);
}
TEST(gradient_onednn, bottleneck_block) {
  using Net = Sequential<Input<8, 4, 4>, nets::Bottleneck<2, 1>, GlobalAvgPool, Flatten, Dense<3>>;
  EXPECT_GT((check_gradients<Net, backend::OneDnn>({.batch = 3, .seed = 6})), 0);
}

}  // namespace
