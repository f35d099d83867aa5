// Every layer, fused pair and LeNet-5 through the numerical-gradient harness, on each backend.
#include <gtest/gtest.h>

#include "../support/gradient_check.hpp"
#include "sinew/backend/onednn.hpp"
#include "sinew/nets/lenet5.hpp"

namespace {
using namespace sinew;
using sinew::test::check_gradients;
using OneDnn = backend::OneDnn;

template <class... L>
using Net = Sequential<L...>;

TEST(gradient_onednn, conv2d_k3_s1_p1) { EXPECT_GT((check_gradients<Net<Input<3, 7, 7>, Conv2d<4, 3, 1, 1>>, OneDnn>()), 0); }
TEST(gradient_onednn, conv2d_k5_s1_p0) { EXPECT_GT((check_gradients<Net<Input<2, 9, 9>, Conv2d<3, 5>>, OneDnn>()), 0); }
TEST(gradient_onednn, conv2d_k3_s2_p1) { EXPECT_GT((check_gradients<Net<Input<3, 8, 8>, Conv2d<5, 3, 2, 1>>, OneDnn>()), 0); }
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
TEST(gradient_onednn, lenet5_1x32x32) {
  EXPECT_GT((check_gradients<nets::LeNet5<Input<1, 32, 32>>, OneDnn>({.batch = 3, .samples = 60})), 0);
}

}  // namespace
