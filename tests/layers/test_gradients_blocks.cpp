// The second half of the layer cases (test_gradients.cpp says what each case checks): pooling, batch, synchronised
// and group normalisation, dropout, the zoo's heads, residual blocks and LeNet-5; then GroupNorm against values
// computed here, SyncBatchNorm2d against BatchNorm2d on one worker, and the per-operator profile of every kind.
#include <gtest/gtest.h>

#include "layer_cases.hpp"

namespace {
using namespace sinew;
using namespace sinew::test::layers;

// clang-format off
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
// One pixel per bin (OneDnn's gather and scatter): from 1x1 as AlexNet's, and from 2x3 with distinct sources.
SINEW_LAYER_CASE(adaptive_avg_pool_1x1_to_6x6_after_conv, ({}), Net<Input<4, 1, 1>, Conv2d<5, 1>, AdaptiveAvgPool<6>>)
SINEW_LAYER_CASE(adaptive_avg_pool_2x3_to_4x6_one_pixel_per_bin, ({}), Net<Input<3, 2, 3>, Conv2d<4, 1>, AdaptiveAvgPool<4, 6>>)
SINEW_LAYER_CASE(adaptive_avg_pool_2x2_to_3x3_replicates_after_conv, ({}), Net<Input<2, 2, 2>, Conv2d<8, 1>, AdaptiveAvgPool<3>, Flatten, Dense<3>>)
// An enlarging pool, Flatten and a Dense lower to one PooledDense node (layers/detail/pooled_dense.hpp), which every
// backend computes as one product with the Dense's matrix folded onto the pool's input: the overlapping bins above
// (2 -> 3: sizes 1, 2, 1), VGG's copies (1x1 -> 7x7) with the fused ReLU at four rows (OneDnn's matmul form of the
// forward) and a Dense after it, uneven bins without a bias at an odd batch. pooled_dense.* below checks the fold
// against the three layers kept apart.
SINEW_LAYER_CASE(pooled_dense_1x1_to_7x7_fused_relu_then_dense, ({.batch = 4, .seed = 13}), Net<Input<6, 1, 1>, AdaptiveAvgPool<7>, Flatten, Dense<5>, ReLU, Dense<3>>)
SINEW_LAYER_CASE(pooled_dense_3x2_to_4x5_after_conv_without_bias, ({.batch = 5, .seed = 14}), Net<Input<3, 3, 2>, Conv2d<4, 1>, AdaptiveAvgPool<4, 5>, Flatten, Dense<6, false>>)
// A Conv2d, its activation and a non-overlapping AvgPool lower to one PooledConv node (layers/detail/pooled_conv.hpp):
// OneDnn pools inside the thin convolution's passes (onednn/thin_conv2d.hpp), and runs any other convolution and
// the pool as two ops, as every other backend does. A 9x9 output leaves a row and a column outside the windows;
// 16 channels (the channel-vectorised forward under AVX-512) without an activation; a 3x3 pool after a sigmoid; 20
// channels on oneDNN's convolution. pooled_conv.* below checks the node against the layers kept apart.
SINEW_LAYER_CASE(pooled_conv_thin_tanh_9x9_to_4x4_then_dense_batch_3, ({.batch = 3, .seed = 15}), Net<Input<3, 11, 11>, Conv2d<6, 3>, Tanh, AvgPool<2>, Flatten, Dense<3>>)
SINEW_LAYER_CASE(pooled_conv_thin_16_channels_k5_without_activation, ({.batch = 3}), Net<Input<2, 9, 9>, Conv2d<16, 5>, AvgPool<2>>)
SINEW_LAYER_CASE(pooled_conv_thin_sigmoid_pool3, ({.seed = 16}), Net<Input<2, 8, 8>, Conv2d<4, 3, 1, 1>, Sigmoid, AvgPool<3>>)
SINEW_LAYER_CASE(pooled_conv_20_channels_on_onednn_primitives, ({}), Net<Input<3, 6, 6>, Conv2d<20, 3, 1, 1>, Tanh, AvgPool<2>>)
// Heads of the zoo: ResNet's (BatchNorm, ReLU, global pool) and AlexNet's (1x1 -> 6x6, dropout). ReLU's kinks:
// a perturbed convolution weight moves a whole channel, and with seed 5 some output sits within h/16 of zero.
SINEW_LAYER_CASE(resnet_head_conv_bn_relu_gap_dense, ({.batch = 3, .seed = 6}), Net<Input<3, 6, 6>, Conv2d<8, 3, 1, 1, false>, BatchNorm2d, ReLU, GlobalAvgPool, Flatten, Dense<3>>)
SINEW_LAYER_CASE(alexnet_head_adaptive6_dropout_dense, ({.batch = 4, .seed = 9}), Net<Input<4, 1, 1>, AdaptiveAvgPool<6>, Flatten, Dropout<>, Dense<5>, ReLU>)
// clang-format on
namespace pooled_dense_nodes {
using sinew::detail::PooledDense;
using VggHead = Net<Input<6, 1, 1>, AdaptiveAvgPool<7>, Flatten, Dense<5>, ReLU, Dense<3>>;
template <class Nodes>
using first_node = std::tuple_element_t<0, as_tuple_t<Nodes>>;
using Fused = first_node<VggHead::nodes<true>>;
static_assert(std::is_same_v<Fused::layer, PooledDense<AdaptiveAvgPool<7>, Dense<5>>> &&
              std::is_same_v<Fused::activation, ReLU> && Fused::kWeights == 5 * 6 * 49 && Fused::kIndex == 0);
static_assert(std::is_same_v<last_t<VggHead::nodes<true>>::layer, Dense<3>> &&
              last_t<VggHead::nodes<true>>::kIndex == 4);
static_assert(VggHead::nodes<true>::kSize == 2 && VggHead::nodes<false>::kSize == 5);
static_assert(std::is_same_v<backend::OneDnn::op<Fused>, backend::generic::pooled_dense_op<backend::OneDnn, Fused>>);
static_assert(std::is_same_v<backend::Eigen::op<Fused>, backend::generic::pooled_dense_op<backend::Eigen, Fused>>);
// A Mix folds on itself: the Flatten and the Dense follow its Uses (here the Dense goes to OneDnn).
static_assert(std::is_same_v<EigenWithOneDnnConvAndDense::op<Fused>,
                             backend::generic::pooled_dense_op<EigenWithOneDnnConvAndDense, Fused>>);
// Inside modules (VGG's classifier) too; a pool that does not enlarge, or a layer between (AlexNet's Dropout),
// keeps the layers apart.
static_assert(std::is_same_v<first_node<Net<Input<6, 1, 1>, Module<"avg", AdaptiveAvgPool<7>>, Flatten,
                                              Module<"classifier", Dense<5>, ReLU>>::nodes<true>>::layer,
                             PooledDense<AdaptiveAvgPool<7>, Dense<5>>>);
static_assert(Net<Input<6, 8, 8>, AdaptiveAvgPool<2>, Flatten, Dense<5>>::nodes<true>::kSize == 3);
static_assert(Net<Input<6, 2, 2>, AdaptiveAvgPool<2>, Flatten, Dense<5>>::nodes<true>::kSize == 3);
static_assert(Net<Input<4, 1, 1>, AdaptiveAvgPool<6>, Flatten, Dropout<>, Dense<5>, ReLU>::nodes<true>::kSize == 4);
}  // namespace pooled_dense_nodes
namespace pooled_conv_nodes {
using sinew::detail::PooledConv;
using pooled_dense_nodes::first_node;
using Pair = Net<Input<3, 14, 14>, Conv2d<6, 5>, Tanh, AvgPool<2>, Conv2d<20, 3>, AvgPool<2>, Flatten, Dense<3>>;
using Thin = first_node<Pair::nodes<true>>;
using Wide = std::tuple_element_t<1, as_tuple_t<Pair::nodes<true>>>;
static_assert(std::is_same_v<Thin::layer, PooledConv<Conv2d<6, 5>, AvgPool<2>>> && std::is_same_v<Thin::activation, Tanh> &&
              std::is_same_v<Thin::output, Shape<6, 5, 5>> && Thin::kWeights == 6 * 3 * 25 && Thin::kIndex == 0);
static_assert(std::is_same_v<Wide::layer, PooledConv<Conv2d<20, 3>, AvgPool<2>>> &&
              std::is_same_v<Wide::activation, NoActivation> && Wide::kIndex == 3 &&
              Wide::kParamOffset == Thin::kParamSpan);
static_assert(Pair::nodes<true>::kSize == 4 && Pair::nodes<false>::kSize == 7);
static_assert(std::is_same_v<backend::OneDnn::op<Thin>, backend::onednn::thin_conv2d_op>);
static_assert(std::is_same_v<backend::OneDnn::op<Wide>, backend::generic::pooled_conv_op<backend::OneDnn, Wide>>);
static_assert(std::is_same_v<backend::Eigen::op<Thin>, backend::generic::pooled_conv_op<backend::Eigen, Thin>>);
// A Mix runs the two on itself: the convolution follows its Uses (here OneDnn's thin op), the pool the base's.
static_assert(std::is_same_v<EigenWithOneDnnConvAndDense::op<Thin>,
                             backend::generic::pooled_conv_op<EigenWithOneDnnConvAndDense, Thin>>);
// Overlapping, padded and max pools, and a layer between, keep the layers apart.
static_assert(Net<Input<3, 8, 8>, Conv2d<4, 3>, Tanh, AvgPool<3, 2>>::nodes<true>::kSize == 2);
static_assert(Net<Input<3, 8, 8>, Conv2d<4, 3>, AvgPool<2, 2, 1>>::nodes<true>::kSize == 2);
static_assert(Net<Input<3, 8, 8>, Conv2d<4, 3>, Tanh, MaxPool<2>>::nodes<true>::kSize == 2);
static_assert(Net<Input<3, 8, 8>, Conv2d<4, 3>, Tanh, Dropout<0>, AvgPool<2>>::nodes<true>::kSize == 3);
}  // namespace pooled_conv_nodes
// clang-format off
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

// Two models compared from the same seed (SyncBatchNorm2d against BatchNorm2d, a folded PooledDense against its
// layers kept apart): a batch of 5 samples drawn from N(1, 4) with fixed labels, and spans equal within 2e-5.
std::vector<float> batch_of_5(std::size_t sample_size) {
  Rng rng(4);
  std::vector<float> x(5 * sample_size);
  for (float& v : x) v = 2 * rng.normal() + 1;
  return x;
}
const std::vector<std::int32_t> kLabelsOf5{0, 3, 1, 2, 1};
void expect_close(std::span<const float> a, std::span<const float> b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], 2e-5f * std::max(1.0f, std::abs(b[i]))) << what << " [" << i << "]";
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
  const std::vector<float> x = batch_of_5(Plain::input_shape::kSize);
  const auto& labels = kLabelsOf5;
  const auto close = expect_close;
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

// The folded node (Input, a 1x1 Conv2d<6>, AdaptiveAvgPool<Cells>, Flatten, Dense<7>, ReLU, Dense<4>) against the
// same layers kept apart by an identity between Flatten and the Dense (Dropout<0>), from the same seed: outputs,
// parameter and input gradients over two steps with an update between, then evaluation twice (the second forward
// reuses the fold: weight_cache.hpp) and again after the weights change.
template <class B, class In, int Cells>
void expect_folded_equals_apart() {
  using Folded = Net<In, Conv2d<6, 1>, AdaptiveAvgPool<Cells>, Flatten, Dense<7>, ReLU, Dense<4>>;
  using Apart = Net<In, Conv2d<6, 1>, AdaptiveAvgPool<Cells>, Flatten, Dropout<0>, Dense<7>, ReLU, Dense<4>>;
  static_assert(Folded::template nodes<true>::kSize == 3 && Apart::template nodes<true>::kSize == 6);
  typename B::context ctx({.threads = 2});
  Model<Folded, B> folded(ctx, {.seed = 9, .input_gradient = true});
  Model<Apart, B> apart(ctx, {.seed = 9, .input_gradient = true});
  const std::vector<float> x = batch_of_5(Folded::input_shape::kSize);
  const auto& labels = kLabelsOf5;
  const auto close = expect_close;
  const auto forward = [&](const char* what) {
    const auto yf = folded.forward(x, 5);
    const std::vector<float> y(yf.begin(), yf.end());
    close(y, apart.forward(x, 5), what);
  };
  const auto update = [&] {
    auto pf = folded.parameters();
    auto pa = apart.parameters();
    const auto gf = folded.gradients();
    for (std::size_t i = 0; i < pf.size(); ++i) pf[i] -= 0.1f * gf[i], pa[i] = pf[i];
  };
  for (int step = 0; step < 2; ++step) {
    forward("output");
    folded.loss(labels), apart.loss(labels);
    folded.backward(), apart.backward();
    close(folded.gradients(), apart.gradients(), "parameter gradients");
    close(folded.input_gradient(), apart.input_gradient(), "input gradient");
    update();
  }
  folded.set_training(false), apart.set_training(false);
  forward("evaluation output");
  forward("evaluation output, the fold reused");
  update();
  forward("evaluation output after the weights changed");
}
template <class B>
class pooled_dense : public ::testing::Test {};
TYPED_TEST_SUITE(pooled_dense, Backends, BackendName);
TYPED_TEST(pooled_dense, equals_the_layers_kept_apart) { expect_folded_equals_apart<TypeParam, Input<5, 2, 2>, 3>(); }
// VGG's case, one input pixel spread over 7 x 7 cells: the fold sums each plane's 49 cells in vectors and a tail.
TYPED_TEST(pooled_dense, on_one_pixel_spread_over_49_cells_equals_the_layers_kept_apart) {
  expect_folded_equals_apart<TypeParam, Input<5, 1, 1>, 7>();
}

// The joined node against the same layers kept apart by an identity between the activation and the pool
// (Dropout<0>), from the same seed, on the thin kernels' sizes (a 9x9 output leaves a row and a column outside the
// windows): outputs, parameter and input gradients over two steps with an update between, and a profiled model's
// (which runs the pool and its backward in passes of their own). Reports name the node, the checkpoint's layout
// the layers.
template <class B>
class pooled_conv : public ::testing::Test {};
TYPED_TEST_SUITE(pooled_conv, Backends, BackendName);
TYPED_TEST(pooled_conv, equals_the_layers_kept_apart) {
  using Joined = Net<Input<3, 11, 11>, Conv2d<6, 3>, Tanh, AvgPool<2>, Conv2d<8, 3>, Tanh, AvgPool<2>, Flatten, Dense<4>>;
  using Apart = Net<Input<3, 11, 11>, Conv2d<6, 3>, Tanh, Dropout<0>, AvgPool<2>, Conv2d<8, 3>, Tanh, Dropout<0>,
                    AvgPool<2>, Flatten, Dense<4>>;
  static_assert(Joined::nodes<true>::kSize == 4 && Apart::nodes<true>::kSize == 8);
  typename TypeParam::context ctx({.threads = 2});
  Model<Joined, TypeParam> joined(ctx, {.seed = 9, .input_gradient = true});
  Model<Joined, TypeParam, metrics::OperatorProfile> profiled(ctx, {.seed = 9, .input_gradient = true});
  Model<Apart, TypeParam> apart(ctx, {.seed = 9, .input_gradient = true});
  EXPECT_EQ(joined.node_names()[0], "conv2d+tanh+avg_pool");
  EXPECT_EQ(joined.layout_names()[0], "conv2d+tanh avg_pool");
  EXPECT_EQ(apart.node_names()[2], "avg_pool");
  const std::vector<float> x = batch_of_5(Joined::input_shape::kSize);
  const auto& labels = kLabelsOf5;
  const auto close = expect_close;
  for (int step = 0; step < 2; ++step) {
    const auto yj = joined.forward(x, 5);
    const std::vector<float> y(yj.begin(), yj.end());
    const auto yp = profiled.forward(x, 5);
    const std::vector<float> y_profiled(yp.begin(), yp.end());
    close(y, apart.forward(x, 5), "output");
    close(y_profiled, y, "profiled output");
    joined.loss(labels), profiled.loss(labels), apart.loss(labels);
    joined.backward(), profiled.backward(), apart.backward();
    close(joined.gradients(), apart.gradients(), "parameter gradients");
    close(joined.input_gradient(), apart.input_gradient(), "input gradient");
    close(profiled.gradients(), joined.gradients(), "profiled parameter gradients");
    close(profiled.input_gradient(), joined.input_gradient(), "profiled input gradient");
    auto pj = joined.parameters();
    auto pp = profiled.parameters();
    auto pa = apart.parameters();
    const auto gj = joined.gradients();
    for (std::size_t i = 0; i < pj.size(); ++i) pj[i] -= 0.1f * gj[i], pp[i] = pa[i] = pj[i];
  }
  EXPECT_GT(profiled.profile().total(OpKind::pooling).calls, 0u);
  EXPECT_GT(profiled.profile().total(OpKind::pooling_backward).calls, 0u);
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
