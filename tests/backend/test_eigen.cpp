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
#include "../support/gradient_check.hpp"
#include "sinew/backend/onednn.hpp"
#include "sinew/model.hpp"
#include "sinew/nets/lenet5.hpp"

namespace {
using namespace sinew;
using sinew::test::check_gradients;
using OneDnn = backend::OneDnn;
using EigenB = backend::Eigen;

template <class... L>
using Net = Sequential<L...>;

/// |a - b| <= tol * max(1, max |ref|) entry by entry: a tolerance relative to the tensor's scale, so small
/// entries of a large tensor are not held to a relative bound that float rounding cannot meet.
void expect_same(std::span<const float> ref, std::span<const float> got, const char* what, double tol = 1e-4) {
  ASSERT_EQ(ref.size(), got.size()) << what;
  double scale = 1;
  for (float v : ref) scale = std::max(scale, double(std::fabs(v)));
  int reported = 0;
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (std::fabs(double(ref[i]) - double(got[i])) > tol * scale && reported++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: onednn " << ref[i] << ", eigen " << got[i] << " (scale " << scale << ")";
}

/// The same network on both backends with the same seed: equal initial parameters, then forward on the
/// same batch and backward with the same output gradient must agree.
template <class N>
void expect_equivalent(int batch = 3, std::uint64_t seed = 5, int eigen_threads = 0) {
  OneDnn::context octx{BackendOptions{}};
  EigenB::context ectx{BackendOptions{.threads = eigen_threads}};
  Model<N, OneDnn> a(octx, ModelOptions{.seed = seed, .input_gradient = true});
  Model<N, EigenB> b(ectx, ModelOptions{.seed = seed, .input_gradient = true});
  ASSERT_TRUE(std::ranges::equal(a.parameters(), b.parameters())) << "the same seed drew different parameters";

  Rng rng(seed + 1);
  std::vector<float> x(std::size_t(batch) * N::input_shape::kSize), r(std::size_t(batch) * N::output_shape::kSize);
  for (float& v : x) v = rng.normal();
  for (float& v : r) v = rng.normal();
  // Two steps: the second reuses every plan and buffer, as training does.
  for (int step = 0; step < 2; ++step) {
    const auto ya = a.forward(x, batch);
    const std::vector<float> ya_copy(ya.begin(), ya.end());
    const auto yb = b.forward(x, batch);
    expect_same(ya_copy, yb, "output");
    a.backward(r);
    b.backward(r);
    expect_same(a.gradients(), b.gradients(), "parameter gradient");
    expect_same(a.input_gradient(), b.input_gradient(), "input gradient");
    for (float& v : x) v *= -0.5f;
  }
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
