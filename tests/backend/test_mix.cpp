// backend::Mix on a mixed net (convolution, BatchNorm, pooling, a residual block, a dense head): from the same
// seed its outputs, parameter and input gradients, running statistics and one SGD step equal the unmixed OneDnn
// and Eigen backends within 1e-4; its operator profile shows "reorder" on the nodes at a boundary and nowhere
// else, and an unmixed net shows none. The layer-by-layer gradient checks of a Mix are in
// tests/layers/test_gradients.cpp (one type of its Backends list).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sinew/backend/eigen.hpp"  // first: EIGEN_USE_THREADS before any Tensor include
#include "../support/onednn_vs_eigen.hpp"
#include "sinew/backend/mix.hpp"
#include "sinew/backend/onednn.hpp"
#include "sinew/metrics/profile.hpp"
#include "sinew/optim/sgd.hpp"

namespace {
using namespace sinew;
using backend::Eigen;
using backend::Mix;
using backend::OneDnn;
using backend::Use;
using metrics::OpKind;

// 16 channels, so that oneDNN keeps its convolution's output blocked (nChw16c) and Eigen's is NHWC: every
// boundary converts. The residual block's branch crosses inside the block.
using MixedNet = Sequential<Input<3, 8, 8>, Conv2d<16, 3, 1, 1, false>, BatchNorm2d, ReLU, MaxPool<2>,
                            Residual<Chain<Conv2d<16, 3, 1, 1, false>, BatchNorm2d>>, ReLU, GlobalAvgPool, Flatten,
                            Dense<10>>;
/// oneDNN with Eigen's BatchNorm2d and Dense (the brief's example).
using EigenNormAndDense = Mix<OneDnn, Use<BatchNorm2d, Eigen>, Use<layer_kind::dense, Eigen>>;
/// The TensorFlow question: Eigen with oneDNN's convolutions and nothing else.
using OneDnnConvolutions = Mix<Eigen, Use<layer_kind::conv2d, OneDnn>>;

static_assert(Backend<EigenNormAndDense> && Backend<OneDnnConvolutions>);
static_assert(EigenNormAndDense::kName == "onednn+eigen" && OneDnnConvolutions::kName == "eigen+onednn");
// Through the one table: a kind no Use names gets exactly the base's op; a Use's kind gets that backend's op.
using ConvNode = Node<Conv2d<4, 3>, Shape<2, 8, 8>, NoActivation, 0, 0>;
static_assert(std::is_same_v<EigenNormAndDense::op<ConvNode>, OneDnn::op<ConvNode>>);
static_assert(!std::is_same_v<OneDnnConvolutions::op<ConvNode>, Eigen::op<ConvNode>>);
static_assert(std::is_same_v<Mix<OneDnn, Use<BatchNorm2d, OneDnn>>::op<ConvNode>, OneDnn::op<ConvNode>>);
// A Use of a kind that a network lacks changes nothing for it (a Mix is a backend, independent of the network).
static_assert(std::is_same_v<Mix<OneDnn, Use<Dropout<>, Eigen>>::op<ConvNode>, OneDnn::op<ConvNode>>);
/// Whole residual blocks on Eigen (the block's branches and its adder), everything else on oneDNN.
using EigenResidualBlocks = Mix<OneDnn, Use<layer_kind::residual, Eigen>>;

constexpr test::EquivalenceOptions kOptions{.batch = 4, .seed = 7, .batch_norm_bias_shift = 3};

TEST(mix, onednn_with_eigen_batch_norm_and_dense_equals_onednn) {
  EXPECT_LE((test::expect_equivalent<MixedNet, OneDnn, EigenNormAndDense>(kOptions)), 1e-4);
}
TEST(mix, onednn_with_eigen_batch_norm_and_dense_equals_eigen) {
  EXPECT_LE((test::expect_equivalent<MixedNet, Eigen, EigenNormAndDense>(kOptions)), 1e-4);
}
TEST(mix, eigen_with_onednn_convolutions_equals_onednn) {
  EXPECT_LE((test::expect_equivalent<MixedNet, OneDnn, OneDnnConvolutions>(kOptions)), 1e-4);
}
TEST(mix, eigen_with_onednn_convolutions_equals_eigen) {
  EXPECT_LE((test::expect_equivalent<MixedNet, Eigen, OneDnnConvolutions>(kOptions)), 1e-4);
}

TEST(mix, onednn_with_eigen_residual_blocks_equals_onednn) {
  EXPECT_LE((test::expect_equivalent<MixedNet, OneDnn, EigenResidualBlocks>(kOptions)), 1e-4);
}

// Eigen's grouped, depthwise and dilated convolutions inside a oneDNN net (MobileNet's pointwise-depthwise pair, a
// grouped pointwise layer, a dilated one): each crosses from oneDNN's blocked layouts into Eigen's NHWC and back.
using GroupedNet = Sequential<Input<3, 8, 8>, Conv2d<16, 3, 1, 1, false>, BatchNorm2d, ReLU,
                              DepthwiseConv2d<16, 3, 2, 1>, BatchNorm2d, ReLU, Conv2d<32, 1, 1, 0, false, 1, 4>,
                              BatchNorm2d, ReLU, Conv2d<16, 3, 1, 2, true, 2>, GlobalAvgPool, Flatten, Dense<10>>;
TEST(mix, onednn_with_eigen_grouped_depthwise_and_dilated_convolutions_equals_onednn) {
  using EigenConvolutions = Mix<OneDnn, Use<layer_kind::conv2d, Eigen>>;
  EXPECT_LE((test::expect_equivalent<GroupedNet, OneDnn, EigenConvolutions>(kOptions)), 1e-4);
}

/// One training step (forward, loss, backward, SGD with momentum) on backend B from seed 7; returns the
/// parameters after the step followed by the loss and the next forward's outputs.
template <class B>
std::vector<float> after_one_step(const std::vector<float>& x, const std::vector<std::int32_t>& y) {
  typename B::context ctx({.threads = 2});
  Model<MixedNet, B> model(ctx, {.seed = 7});
  optim::Sgd sgd({.lr = 0.1f, .momentum = 0.9f}, model.parameters().size());
  const int batch = int(y.size());
  model.forward(x, batch);
  const float loss = model.loss(y).loss;
  model.backward();
  sgd.step(model.parameters(), model.gradients());
  std::vector<float> out(model.parameters().begin(), model.parameters().end());
  out.push_back(loss);
  const auto next = model.forward(x, batch);
  out.insert(out.end(), next.begin(), next.end());
  out.insert(out.end(), model.buffers().begin(), model.buffers().end());
  return out;
}

TEST(mix, one_training_step_equals_both_unmixed_backends) {
  Rng rng(3);
  std::vector<float> x(4 * MixedNet::input_shape::kSize);
  for (float& v : x) v = rng.normal();
  const std::vector<std::int32_t> y{1, 4, 7, 9};
  const auto onednn = after_one_step<OneDnn>(x, y);
  const auto eigen = after_one_step<Eigen>(x, y);
  EXPECT_LE(test::expect_same(onednn, after_one_step<EigenNormAndDense>(x, y), "onednn+eigen against onednn"), 1e-4);
  EXPECT_LE(test::expect_same(eigen, after_one_step<EigenNormAndDense>(x, y), "onednn+eigen against eigen"), 1e-4);
  EXPECT_LE(test::expect_same(onednn, after_one_step<OneDnnConvolutions>(x, y), "eigen+onednn against onednn"), 1e-4);
  EXPECT_LE(test::expect_same(eigen, after_one_step<OneDnnConvolutions>(x, y), "eigen+onednn against eigen"), 1e-4);
}

/// The profile of one training step of MixedNet on B.
template <class B>
metrics::OperatorProfile profile_of_one_step() {
  typename B::context ctx({.threads = 2});
  Model<MixedNet, B, metrics::OperatorProfile> model(ctx, {.seed = 7});
  std::vector<float> x(2 * MixedNet::input_shape::kSize, 0.25f);
  model.forward(x, 2);
  model.loss(std::vector<std::int32_t>{0, 3});
  model.backward();
  return model.profile();
}

TEST(mix, profile_shows_reorder_exactly_where_a_boundary_is) {
  const auto p = profile_of_one_step<EigenNormAndDense>();
  int boundaries = 0;
  for (const auto& e : p.nodes()) {
    // BatchNorm2d and Dense run on Eigen, and so does the BatchNorm inside the residual block's branch.
    const bool boundary = e.name.starts_with("batch_norm2d") || e.name.starts_with("dense") || e.name == "residual";
    boundaries += boundary;
    const auto reorder = e.kinds[std::size_t(OpKind::reorder)];
    const auto reorder_backward = e.kinds[std::size_t(OpKind::reorder_backward)];
    if (boundary) {
      EXPECT_GT(reorder.calls, 0u) << e.name;
      EXPECT_GT(reorder.seconds, 0.0) << e.name;
      EXPECT_GT(reorder_backward.calls, 0u) << e.name;
    } else {
      EXPECT_EQ(reorder.calls + reorder_backward.calls, 0u) << e.name << " is no boundary but reports a reorder";
    }
  }
  EXPECT_EQ(boundaries, 3);
  // The ops keep their own kinds beside the reorders.
  EXPECT_GT(p.total(OpKind::batch_norm).calls, 0u);
  EXPECT_GT(p.total(OpKind::fully_connected_backward_weights).calls, 0u);
}

TEST(mix, unmixed_backends_report_no_reorder) {
  for (const auto& p : {profile_of_one_step<OneDnn>(), profile_of_one_step<Eigen>()}) {
    EXPECT_EQ(p.total(OpKind::reorder).calls, 0u);
    EXPECT_EQ(p.total(OpKind::reorder_backward).calls, 0u);
    EXPECT_GT(p.total(OpKind::batch_norm).calls, 0u);
  }
}

}  // namespace
