// The OneDnn backend's forward passes against naive double-precision references, with parameters read
// from the flat buffer in PyTorch's layout (so the layout convention is checked too).
#include <gtest/gtest.h>

#include <vector>

#include "../support/reference.hpp"
#include "sinew/backend/onednn.hpp"
#include "sinew/model.hpp"

namespace {
using namespace sinew;
namespace ref = sinew::test::reference;
using OneDnn = backend::OneDnn;

template <class Net>
struct Fixture {
  static constexpr int kBatch = 3;
  OneDnn::context ctx{BackendOptions{}};
  Model<Net, OneDnn> model{ctx, ModelOptions{.seed = 5}};
  std::vector<float> x;
  Fixture() {
    Rng rng(9);
    x.resize(kBatch * Net::input_shape::kSize);
    for (float& v : x) v = rng.normal();
  }
  std::vector<float> run() {
    auto y = model.forward(x, kBatch);
    return {y.begin(), y.end()};
  }
  const float* params() { return model.parameters().data(); }
};

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tol = 1e-4) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << "at " << i;
}

TEST(onednn_forward, conv2d_k3_s2_p1_matches_reference) {
  Fixture<Sequential<Input<3, 9, 9>, Conv2d<5, 3, 2, 1>>> f;
  const float* w = f.params();
  expect_close(f.run(), ref::conv2d(f.x, w, w + 5 * 3 * 9, 3, 3, 9, 9, 5, 3, 2, 1));
}

TEST(onednn_forward, conv2d_fused_relu_matches_reference) {
  Fixture<Sequential<Input<2, 8, 8>, Conv2d<6, 5>, ReLU>> f;
  const float* w = f.params();
  auto want = ref::conv2d(f.x, w, w + 6 * 2 * 25, 3, 2, 8, 8, 6, 5, 1, 0);
  for (double& v : want) v = ref::relu(v);
  expect_close(f.run(), want);
}

TEST(onednn_forward, dense_fused_sigmoid_matches_reference) {
  Fixture<Sequential<Input<2, 3, 3>, Flatten, Dense<4>, Sigmoid>> f;
  const float* w = f.params();
  auto want = ref::dense(f.x, w, w + 4 * 18, 3, 18, 4);
  for (double& v : want) v = ref::sigmoid(v);
  expect_close(f.run(), want);
}

TEST(onednn_forward, flatten_after_blocked_conv_keeps_pytorch_order) {
  // The conv output is in a blocked layout; Flatten must still order features as (C, H, W).
  Fixture<Sequential<Input<2, 6, 6>, Conv2d<9, 3>, Flatten>> f;
  const float* w = f.params();
  expect_close(f.run(), ref::conv2d(f.x, w, w + 9 * 2 * 9, 3, 2, 6, 6, 9, 3, 1, 0));
}

TEST(onednn_forward, max_pool_k3_s2_p1_matches_reference) {
  Fixture<Sequential<Input<3, 7, 7>, MaxPool<3, 2, 1>>> f;
  expect_close(f.run(), ref::pool(f.x, 3, 3, 7, 7, 3, 2, 1, true));
}

TEST(onednn_forward, avg_pool_counts_padding_like_pytorch) {
  Fixture<Sequential<Input<2, 5, 5>, AvgPool<3, 1, 1>>> f;
  expect_close(f.run(), ref::pool(f.x, 3, 2, 5, 5, 3, 1, 1, false));
}

TEST(onednn_forward, tanh_matches_std_tanh) {
  Fixture<Sequential<Input<2, 4, 4>, Tanh>> f;
  std::vector<double> want(f.x.begin(), f.x.end());
  for (double& v : want) v = std::tanh(v);
  expect_close(f.run(), want, 1e-5);
}

TEST(onednn_forward, short_last_batch_uses_its_own_plan) {
  // A second batch size builds a second plan on the same parameters; results agree sample by sample.
  Fixture<Sequential<Input<2, 6, 6>, Conv2d<4, 3>, Tanh, Flatten, Dense<3>>> f;
  const auto full = f.run();
  const std::vector<float> first(f.x.begin(), f.x.begin() + 72);
  const auto one = f.model.forward(first, 1);
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(one[i], full[i]);
}

TEST(onednn_forward, wrong_input_size_is_a_shape_error) {
  Fixture<Sequential<Input<2, 6, 6>, Flatten, Dense<3>>> f;
  std::vector<float> x(71);
  EXPECT_THROW(f.model.forward(x, 1), shape_error);
}

}  // namespace
