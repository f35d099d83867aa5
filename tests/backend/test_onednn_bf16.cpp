// backend::OneDnnBf16 against backend::OneDnn on one small net (a convolution, batch norm, two inner products):
// gradients within bf16's rounding, f32 master weights that keep an update below bf16's resolution, a short
// training that ends at f32's accuracy, a checkpoint round trip, and the refusal on a CPU without bf16 kernels.
// Every case but the refusal skips, with a message, where oneDNN's effective ISA has no bf16 (a CPU without
// AVX512_BF16 or AMX, or ONEDNN_MAX_CPU_ISA=AVX2: tests/CMakeLists.txt runs the refusal that way, and the
// numerics-avx2 preset runs the whole set that way).
#include <gtest/gtest.h>

#include "sinew/backend/eigen.hpp"  // first: EIGEN_USE_THREADS before any Tensor include (onednn_vs_eigen.hpp names Eigen)
#include "../support/onednn_vs_eigen.hpp"

#include <unistd.h>
#include <algorithm>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "sinew/backend/mix.hpp"
#include "sinew/backend/onednn_bf16.hpp"
#include "sinew/data.hpp"
#include "sinew/io/checkpoint.hpp"
#include "sinew/nets/resnet.hpp"
#include "sinew/optim/sgd.hpp"
#include "sinew/trainer.hpp"

namespace {
using namespace sinew;
using backend::OneDnn;
using backend::OneDnnBf16;
namespace fs = std::filesystem;

// 16 channels, so that oneDNN picks blocked layouts; a bias-free convolution before batch norm, as in ResNets.
// Average pooling, not max: bf16's rounding moves which input of a window is largest, and a max pool then routes
// that window's whole gradient to another pixel, a difference that says nothing about the primitives.
using Net = Sequential<Input<3, 12, 12>, Conv2d<16, 3, 1, 1, false>, BatchNorm2d, ReLU, AdaptiveAvgPool<6>, Flatten,
                       Dense<32>, ReLU, Dense<4>>;

// Only convolutions and inner products change op; everything else is OneDnn's op, the same type.
using ConvNode = Node<Conv2d<4, 3>, Shape<2, 8, 8>, NoActivation, 0, 0>;
using NormNode = Node<BatchNorm2d, Shape<2, 8, 8>, NoActivation, 0, 0>;
static_assert(std::is_same_v<OneDnnBf16::op<ConvNode>, backend::onednn::conv2d_bf16_op>);
static_assert(std::is_same_v<OneDnnBf16::op<NormNode>, OneDnn::op<NormNode>>);
// A layer OneDnn runs as Winograd's (f32 only: onednn/winograd_conv2d.hpp) is bf16's direct convolution.
using WinogradNode = Node<Conv2d<64, 3, 1, 1, false>, Shape<64, 8, 8>, NoActivation, 0, 0>;
static_assert(std::is_same_v<OneDnn::op<WinogradNode>, backend::onednn::winograd_on_avx2_conv2d_op>);
static_assert(std::is_same_v<OneDnnBf16::op<WinogradNode>, backend::onednn::conv2d_bf16_op>);
// A thin convolution and the pool after it (one PooledConv node: OneDnn's thin op pools inside its passes) are the
// two ops apart in bf16: there are no bf16 thin kernels.
using PooledConvNode = Node<sinew::detail::PooledConv<Conv2d<6, 5>, AvgPool<2>>, Shape<3, 12, 12>, Tanh, 0, 0>;
static_assert(std::is_same_v<OneDnn::op<PooledConvNode>, backend::onednn::thin_conv2d_op>);
static_assert(std::is_same_v<OneDnnBf16::op<PooledConvNode>, backend::generic::pooled_conv_op<OneDnnBf16, PooledConvNode>>);
// Between layers the tensors are bf16 where the next op reads bf16 (a convolution without an activation in its layer
// writes bf16; batch norm with or without its ReLU, the ReLU after a residual addition and the addition keep the
// type they are given) and f32 where the op reads f32 only (sinew's SIMD activations, pooling, inner products).
using NormReluNode = Node<BatchNorm2d, Shape<2, 8, 8>, ReLU, 0, 0>;
using NormTanhNode = Node<BatchNorm2d, Shape<2, 8, 8>, Tanh, 0, 0>;
using ReluNode = Node<ReLU, Shape<2, 8, 8>, NoActivation, 0, 0>;
using TanhNode = Node<Tanh, Shape<2, 8, 8>, NoActivation, 0, 0>;
using PoolNode = Node<MaxPool<2, 2>, Shape<2, 8, 8>, NoActivation, 0, 0>;
static_assert(std::is_same_v<OneDnnBf16::op<NormReluNode>, backend::onednn::batch_norm_op>);
static_assert(std::is_same_v<OneDnnBf16::op<NormTanhNode>, backend::onednn::f32_input<backend::onednn::batch_norm_op>>);
static_assert(std::is_same_v<OneDnnBf16::op<ReluNode>, backend::onednn::activation_op>);
static_assert(std::is_same_v<OneDnnBf16::op<TanhNode>, backend::onednn::f32_input<backend::onednn::activation_op>>);
static_assert(std::is_same_v<OneDnnBf16::op<PoolNode>, backend::onednn::f32_input<OneDnn::op<PoolNode>>>);
// ReLU6 as ReLU: on bf16 unfused (oneDNN's clip_v2), while batch norm's fused ReLU6 is sinew's f32 kernel.
using Relu6Node = Node<ReLU6, Shape<2, 8, 8>, NoActivation, 0, 0>;
using NormRelu6Node = Node<BatchNorm2d, Shape<2, 8, 8>, ReLU6, 0, 0>;
static_assert(std::is_same_v<OneDnnBf16::op<Relu6Node>, backend::onednn::activation_op>);
static_assert(std::is_same_v<OneDnnBf16::op<NormRelu6Node>, backend::onednn::f32_input<backend::onednn::batch_norm_op>>);
// A backend like any other: a Mix's base, with Eigen's batch norm.
static_assert(BackendPolicy<backend::Mix<OneDnnBf16, backend::Use<BatchNorm2d, backend::Eigen>>>);

#define SKIP_WITHOUT_BF16()                                                                                    \
  if (!backend::onednn::has_bf16_kernels())                                                                   \
  GTEST_SKIP() << "oneDNN has no bf16 kernels here (effective ISA "                                            \
               << backend::onednn::isa_name(dnnl::get_effective_cpu_isa())                                     \
               << "): OneDnnBf16 refuses to run, which onednn_bf16.refuses_without_bf16_kernels checks"

float to_bf16(float x) {  // round to nearest even, as oneDNN's reorders round
  std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  u += 0x7fffu + ((u >> 16) & 1u);
  return std::bit_cast<float>(u & 0xffff0000u);
}

TEST(onednn_bf16, refuses_without_bf16_kernels) {
  if (backend::onednn::has_bf16_kernels())
    GTEST_SKIP() << "this CPU runs bf16 (effective ISA " << backend::onednn::isa_name(dnnl::get_effective_cpu_isa())
                 << "): the refusal is checked by the ctest onednn_bf16.refusal_under_avx2 "
                    "(ONEDNN_MAX_CPU_ISA=AVX2)";
  try {
    OneDnnBf16::context ctx({.threads = 1});
    FAIL() << "OneDnnBf16 started on a CPU without bf16 kernels";
  } catch (const backend_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("backend::OneDnnBf16 needs a CPU with AVX512_BF16 or AMX"), std::string::npos) << what;
    EXPECT_NE(what.find("Use backend::OneDnn (f32)"), std::string::npos) << what;
  }
}

// bf16 keeps 8 bits of mantissa: each input and weight is rounded with a relative error of at most 2^-9, so each
// product in a sum is off by at most about 2^-8 relative, and a sum of n such products (accumulated in f32) by at
// most 2^-8 times the sum of the magnitudes. The gradients pass through three such layers (two bf16 operands in
// each of forward, backward data and backward weights) and batch norm's division by the batch's deviation, which
// does not shrink relative errors. Measured against the largest entry of each tensor (the whole parameter gradient
// one of them), the difference stays below 4 x 2^-8 = 1.6% here (0.4% measured, on AVX512_BF16). Each parameter's
// gradient, against its own largest entry (at least 1), moves more: a small sum of many rounded terms (a batch
// norm's weight, a channel fed by it) kept 1.8% here and 2.9% in the residual blocks below (Zen 5), so it is held to
// 12 x 2^-8 = 4.7%. An f32 result differs by 1e-6, so a layer left in f32 would not show, but a wrong primitive (a
// bf16 gradient written as f32, a transposed weight) is off by 100%.
constexpr double kBf16Tolerance = 4.0 / 256, kBf16ParameterTolerance = 12.0 / 256;

TEST(onednn_bf16, gradients_of_conv_norm_dense_equal_f32_within_bf16_rounding) {
  SKIP_WITHOUT_BF16();
  const double worst = test::expect_equivalent<Net, OneDnn, OneDnnBf16>(
      {.batch = 8, .seed = 7, .tol = kBf16Tolerance, .parameter_tol = kBf16ParameterTolerance,
       .batch_norm_bias_shift = 3});
  EXPECT_GT(worst, 1e-5) << "no bf16 rounding visible: are the primitives still f32?";
}

// Residual blocks with bf16 tensors between their layers: the additions (of two bf16 tensors, and of a bf16 tensor
// and a projection's), the ReLU after each on bf16, a batch norm before a Tanh that reads f32, average pooling fed
// f32 (max pooling would move its windows' maxima under rounding, see Net), and the conversions at each boundary. Each bf16 tensor between layers adds one rounding (2^-9 relative) per
// layer to the bound of the test above, forward and backward: 4 x 2^-8 still holds with room on this depth
// (measured below 1%), while an addition or ReLU that read bf16 as f32 would be off by the whole value.
using ResidualNet = Sequential<Input<3, 12, 12>, Conv2d<16, 3, 1, 1, false>, BatchNorm2d, ReLU, nets::BasicBlock<16>,
                               nets::BasicBlock<32, 2>, Conv2d<16, 1, 1, 0, false>, BatchNorm2d, Tanh, AvgPool<2, 2>,
                               Flatten, Dense<4>>;

TEST(onednn_bf16, gradients_of_residual_blocks_with_bf16_tensors_equal_f32_within_bf16_rounding) {
  SKIP_WITHOUT_BF16();
  const double worst = test::expect_equivalent<ResidualNet, OneDnn, OneDnnBf16>(
      {.batch = 8, .seed = 7, .tol = kBf16Tolerance, .parameter_tol = kBf16ParameterTolerance,
       .batch_norm_bias_shift = 3});
  EXPECT_GT(worst, 1e-5) << "no bf16 rounding visible: are the primitives still f32?";
}

// The same blocks with Eigen's batch norm in a Mix over OneDnnBf16: each boundary converts the bf16 tensors to the
// other backend's f32 and back (backend/mix.hpp), forward and backward.
TEST(onednn_bf16, residual_blocks_in_a_mix_with_eigen_batch_norm_equal_f32_within_bf16_rounding) {
  SKIP_WITHOUT_BF16();
  using Mixed = backend::Mix<OneDnnBf16, backend::Use<BatchNorm2d, backend::Eigen>>;
  const double worst = test::expect_equivalent<ResidualNet, OneDnn, Mixed>(
      {.batch = 8, .seed = 7, .tol = kBf16Tolerance, .parameter_tol = kBf16ParameterTolerance,
       .batch_norm_bias_shift = 3});
  EXPECT_GT(worst, 1e-5) << "no bf16 rounding visible: are the primitives still f32?";
}

// Grouped, depthwise and dilated convolutions run oneDNN's grouped primitive in bf16 (even where a plain layer of
// the same shape would take the f32 small-image form), MobileNet's pointwise-depthwise pair and a grouped dilated
// layer, each before batch norm: the same bound as above, over three bf16 convolutions.
using GroupedNet = Sequential<Input<8, 10, 10>, Conv2d<32, 1, 1, 0, false>, BatchNorm2d, ReLU,
                              DepthwiseConv2d<32, 3, 2, 1>, BatchNorm2d, ReLU, Conv2d<32, 3, 1, 2, false, 2, 4>,
                              BatchNorm2d, ReLU, AdaptiveAvgPool<2>, Flatten, Dense<4>>;
static_assert(std::is_same_v<OneDnnBf16::op<Node<DepthwiseConv2d<4, 3, 1, 1>, Shape<4, 2, 2>, NoActivation, 0, 0>>,
                             backend::onednn::conv2d_bf16_op>);

TEST(onednn_bf16, gradients_of_grouped_depthwise_and_dilated_convolutions_equal_f32_within_bf16_rounding) {
  SKIP_WITHOUT_BF16();
  const double worst = test::expect_equivalent<GroupedNet, OneDnn, OneDnnBf16>(
      {.batch = 8, .seed = 7, .tol = kBf16Tolerance, .parameter_tol = kBf16ParameterTolerance,
       .batch_norm_bias_shift = 3});
  EXPECT_GT(worst, 1e-5) << "no bf16 rounding visible: are the primitives still f32?";
}

// The optimizer updates the f32 master copy: an update 1/8 of bf16's half-resolution at the weights' scale
// must change the parameters by exactly that in f32, and after enough such steps the weights the bf16 forward
// reads must have moved. Stored only in bf16, each step would round back to the same value.
TEST(onednn_bf16, sgd_keeps_f32_master_weights_that_accumulate_updates_below_bf16_resolution) {
  SKIP_WITHOUT_BF16();
  OneDnnBf16::context ctx({.threads = 1});
  Model<Net, OneDnnBf16> model(ctx, {.seed = 5});
  auto params = model.parameters();
  // Start exactly on bf16 values no smaller than 2^-6 (zero biases too), so that every update below is
  // representable in f32 and below bf16's resolution at the same time.
  for (float& p : params) p = to_bf16(std::fabs(p) < 0x1p-6f ? std::copysign(0x1p-6f, p) : p);
  Rng rng(6);
  constexpr int kBatch = 8;
  std::vector<float> x(kBatch * Net::input_shape::kSize);
  for (float& v : x) v = rng.normal();
  const std::vector<std::int32_t> y{0, 1, 2, 3, 0, 1, 2, 3};
  auto step_gradients = [&] {
    model.forward(x, kBatch);
    model.loss(y);
    model.backward();
    return std::vector<float>(model.gradients().begin(), model.gradients().end());
  };
  const std::vector<float> before(params.begin(), params.end());
  const std::vector<float> g = step_gradients();
  float largest_g = 0;
  for (float v : g) largest_g = std::max(largest_g, std::fabs(v));
  ASSERT_GT(largest_g, 0);
  // bf16's half ulp at |w| >= 2^-6 is at least 2^-15; the largest update is an eighth of that.
  const float lr = 0x1p-18f / largest_g;
  optim::Sgd sgd({.lr = lr}, params.size());
  sgd.step(model.parameters(), model.gradients());
  int moved = 0;
  for (std::size_t i = 0; i < before.size(); ++i) {
    // The optimizer may round lr * g before the subtraction or fuse both (an FMA), as may this expression where
    // the compiler contracts it: either rounding is the f32 update, a bf16 one is 2^16 times coarser.
    const volatile float product = lr * g[i];
    const float separate = before[i] - product, fused = std::fma(-lr, g[i], before[i]);
    EXPECT_TRUE(params[i] == separate || params[i] == fused)
        << "parameter " << i << " is not the f32 update: " << params[i] << " against " << separate << " or " << fused;
    EXPECT_EQ(to_bf16(params[i]), before[i]) << "parameter " << i << ": the update should be below bf16's resolution";
    moved += params[i] != before[i];
  }
  EXPECT_GT(moved, int(before.size()) / 4) << "most parameters should have moved in f32";
  // 32 more steps (4 times a half ulp at most, for the parameter with the largest gradient): the bf16 weights the
  // forward reads now differ, and so does the output.
  const auto out = model.forward(x, kBatch);
  const std::vector<float> y0(out.begin(), out.end());
  for (int s = 0; s < 32; ++s) {
    step_gradients();
    sgd.step(model.parameters(), model.gradients());
  }
  int rounded_differently = 0;
  for (std::size_t i = 0; i < before.size(); ++i) rounded_differently += to_bf16(params[i]) != before[i];
  EXPECT_GT(rounded_differently, 0) << "32 sub-resolution updates never reached a new bf16 value";
  const auto y1 = model.forward(x, kBatch);
  EXPECT_FALSE(std::equal(y0.begin(), y0.end(), y1.begin())) << "the forward still reads the initial bf16 weights";
}

// Four classes of 3 x 12 x 12 images: a bright 4 x 4 square in one quadrant, its colour channel drawn at
// random, under noise as strong as the square's contrast, so that the net does not reach 100% in two epochs.
data::Dataset quadrants(std::size_t n, std::uint64_t seed) {
  data::Dataset d;
  d.channels = 3, d.height = 12, d.width = 12, d.num_classes = 4;
  d.pixels.resize(n * 3 * 144);
  d.labels.resize(n);
  Rng rng(seed);
  for (std::size_t i = 0; i < n; ++i) {
    const int label = int(rng.below(4)), channel = int(rng.below(3));
    const int y0 = 1 + (label / 2) * 6 + int(rng.below(2)), x0 = 1 + (label % 2) * 6 + int(rng.below(2));
    d.labels[i] = label;
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < 12; ++y)
        for (int x = 0; x < 12; ++x) {
          const bool lit = c == channel && y >= y0 && y < y0 + 4 && x >= x0 && x < x0 + 4;
          d.pixels[i * 432 + std::size_t(c * 144 + y * 12 + x)] =
              std::uint8_t(std::min<float>(255, (lit ? 110 : 60) + 110 * rng.uniform01()));
        }
  }
  return d;
}

data::CachedLoader loader_for(data::Dataset d, bool shuffle) {
  data::LoaderOptions o;
  o.batch_size = 16;
  o.shuffle = shuffle;
  o.seed = 4;
  o.mean = {0.5f, 0.5f, 0.5f};
  o.std = {0.25f, 0.25f, 0.25f};
  return data::CachedLoader(std::move(d), o);
}

constexpr TrainerOptions kOptions{.threads = 1, .seed = 3, .warmup_steps = 0};  // one thread: no barriers to wait at under load
constexpr optim::Sgd::options kSgd{.lr = 0.02f, .momentum = 0.9f};

template <class B>
EvalStats trained_for_two_epochs() {
  auto train = loader_for(quadrants(768, 1), true);
  auto test = loader_for(quadrants(512, 2), false);
  Trainer<Net, B> trainer(kOptions, kSgd);
  trainer.train_epoch(train);
  trainer.train_epoch(train);
  return trainer.evaluate(test);
}

// The same seed, data and steps in f32 and bf16: held-out accuracy within 3 points (15 of 512 images). Measured
// here: f32 96.1%, bf16 94.9%. On 48 steps of 16 images, a few images' worth of difference is what any change of
// rounding gives (two runs part ways after the first step that rounds differently); a bf16 path that did not
// learn, or learnt from wrong gradients, ends tens of points lower.
TEST(onednn_bf16, two_epochs_reach_the_f32_accuracy_within_3_points) {
  SKIP_WITHOUT_BF16();
  const EvalStats f32 = trained_for_two_epochs<OneDnn>();
  const EvalStats bf16 = trained_for_two_epochs<OneDnnBf16>();
  std::printf("held-out accuracy after 2 epochs: f32 %.4f, bf16 %.4f (loss %.4f, %.4f)\n", f32.accuracy,
              bf16.accuracy, f32.loss, bf16.loss);
  EXPECT_GT(f32.accuracy, 0.6) << "the problem is not learnt in f32: the comparison says nothing";
  EXPECT_NEAR(bf16.accuracy, f32.accuracy, 0.03);
}

// A bf16 convolution with its input gradient (a layer after the first, as every ResNet convolution but the stem),
// in both of its forms. Without an activation in the layer (ResNet's, before batch norm) it writes its output in
// bf16 for the next op to read as it is; with a ReLU (AlexNet's, VGG's) the output stays f32, and backward data
// reads the bf16 output gradient that backward weights converted (one reorder per step, not two). All three
// results are the f32 sums of the bf16-rounded operands: the output of x and W, the weights' gradient of dy and x,
// the input gradient of dy and W. oneDNN accumulates in f32 in another order, so they agree to f32's rounding of
// sums of 144 products (1e-4 of the largest entry), and a bf16 output to one rounding more (2^-8 of the value);
// reading dy unconverted, or another layer's gradient, would be off by the whole value. On a small output image
// (4x4, as ResNet-18's last stage on CIFAR) the weights' gradient is lowered_backward_weights' product over the
// gathered patches, also strided: a patch gathered from the wrong pixel, a tap left unzeroed on the padding or a
// transposed product is off by the whole value too.
struct bf16_conv_case {
  simd::activation act;
  int in = 6, stride = 1;
  bool lowered = false;  // whether backward weights must run as the lowered product
  int kernel = 3;        // padded by kernel / 2
};

template <class Op = backend::onednn::conv2d_bf16_op>
void check_bf16_convolution(const bf16_conv_case& t) {
  using namespace backend::onednn;
  OneDnnBf16::context ctx({.threads = 2});
  constexpr int N = 3, C = 16, O = 16;
  const int K = t.kernel, P = K / 2, H = t.in, S = t.stride, OH = (H + 2 * P - K) / S + 1;
  const bool relu = t.act == simd::activation::relu;
  const backend::Conv2dConfig c{N, C, H, H, O, OH, OH, K, S, P, false, t.act};
  Rng rng(11);
  std::vector<float> x(N * C * H * H), w(O * C * K * K), dw(w.size(), -1.0f), dy(N * O * OH * OH);
  for (float& v : x) v = rng.normal();
  for (float& v : w) v = 0.2f * rng.normal();
  for (float& v : dy) v = rng.normal();
  Op op;
  const desc src_md = plain_desc(N, C, H, H), dst_md = plain_desc(N, O, OH, OH);
  const ParamSlots slots{w.data(), nullptr, dw.data(), nullptr};
  if constexpr (std::is_same_v<Op, lowered_conv2d_bf16_op>)
    op.lowered_conv2d_op::setup(ctx, src_md, c, slots, true, dt::bf16);
  else
    op.conv2d_op::setup(ctx, src_md, c, slots, true, dt::bf16);
  using backend::onednn::compat::data_type_of;
  EXPECT_EQ(data_type_of(op.dst_desc()), relu ? dt::f32 : dt::bf16);
  EXPECT_EQ(data_type_of(op.diff_src_desc()), dt::f32) << "the input gradient takes the input's type";
  EXPECT_EQ(op.backward_data_shares_diff_dst(), relu);
  EXPECT_EQ(op.backward_weights_lowered(), t.lowered);
  op.bind_diff_dst(ctx, dst_md);
  const memory src(src_md, ctx.engine(), x.data()), diff_dst(dst_md, ctx.engine(), dy.data());
  for (int pass = 0; pass < 2; ++pass) {  // twice: the second reuses the bound conversions
    op.forward(ctx, src);
    op.backward(ctx, src, diff_dst);
  }
  ctx.stream().wait();
  std::vector<float> y(dy.size()), dx(x.size());
  to_plain(ctx, op.dst(), y.data());
  to_plain(ctx, op.diff_src(), dx.data());
  // References in double on the rounded operands; at(n, ch, i, j, side) is NCHW.
  const auto at = [](int ch_count, int n, int ch, int i, int j, int side) {
    return ((n * ch_count + ch) * side + i) * side + j;
  };
  std::vector<double> want_y(y.size()), want_dx(x.size()), want_dw(w.size());
  const auto for_each_product = [&](auto&& f) {
    for (int n = 0; n < N; ++n)
      for (int o = 0; o < O; ++o)
        for (int i = 0; i < OH; ++i)
          for (int j = 0; j < OH; ++j)
            for (int ch = 0; ch < C; ++ch)
              for (int ki = 0; ki < K; ++ki)
                for (int kj = 0; kj < K; ++kj) {
                  const int ii = i * S + ki - P, jj = j * S + kj - P;
                  if (ii < 0 || ii >= H || jj < 0 || jj >= H) continue;
                  f(at(O, n, o, i, j, OH), at(C, n, ch, ii, jj, H), ((o * C + ch) * K + ki) * K + kj);
                }
  };
  for_each_product([&](int yi, int xi, int wi) { want_y[yi] += double(to_bf16(x[xi])) * to_bf16(w[wi]); });
  // The gradient of the pre-activation: dy where the ReLU passed its input (the f32 output says where), in bf16.
  std::vector<double> dz(dy.size());
  for (std::size_t i = 0; i < dy.size(); ++i) dz[i] = relu && y[i] <= 0 ? 0.0 : to_bf16(dy[i]);
  if (relu)
    for (double& v : want_y) v = std::max(v, 0.0);
  for_each_product([&](int yi, int xi, int wi) {
    want_dx[xi] += dz[yi] * to_bf16(w[wi]);
    want_dw[wi] += dz[yi] * to_bf16(x[xi]);
  });
  const auto near = [](const std::vector<float>& got, const std::vector<double>& want, double rounding,
                       const char* what) {
    double scale = 0;
    for (double v : want) scale = std::max(scale, std::fabs(v));
    for (std::size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-4 * scale + rounding * std::fabs(want[i])) << what << " at " << i;
  };
  near(y, want_y, relu ? 0.0 : 0x1p-8, "output");
  near(dw, want_dw, 0.0, "weights' gradient");
  near(dx, want_dx, 0.0, "input gradient");
}

TEST(onednn_bf16, conv_without_activation_writes_bf16_output) {
  SKIP_WITHOUT_BF16();
  check_bf16_convolution({simd::activation::none});
}

TEST(onednn_bf16, conv_with_relu_writes_f32_and_backward_data_reads_the_shared_bf16_output_gradient) {
  SKIP_WITHOUT_BF16();
  check_bf16_convolution({simd::activation::relu});
}

TEST(onednn_bf16, conv_onto_a_4x4_image_computes_the_weights_gradient_as_one_product_over_its_patches) {
  SKIP_WITHOUT_BF16();
  check_bf16_convolution({simd::activation::none, 4, 1, true});
  check_bf16_convolution({simd::activation::relu, 4, 1, true});
  check_bf16_convolution({simd::activation::none, 8, 2, true});
}

// ResNet-50's 1x1 layers on 4x4 and 2x2 images (32x32 inputs) and its strided projections onto them: the product
// too, its patches one tap each. On 6x6 (36 output pixels) oneDNN's own backward weights stays.
TEST(onednn_bf16, conv_1x1_onto_a_4x4_image_computes_the_weights_gradient_as_one_product) {
  SKIP_WITHOUT_BF16();
  check_bf16_convolution({simd::activation::none, 4, 1, true, 1});
  check_bf16_convolution({simd::activation::relu, 3, 1, true, 1});
  check_bf16_convolution({simd::activation::none, 8, 2, true, 1});
  check_bf16_convolution({simd::activation::none, 6, 1, false, 1});
}

// The same layers at stride 1 run whole as the bf16 inner product over the NHWC image (lowered_conv2d_bf16_op): the
// same three results, from an NCHW f32 input converted first, its output NHWC.
TEST(onednn_bf16, conv_1x1_onto_a_4x4_image_as_the_bf16_product_over_the_image) {
  SKIP_WITHOUT_BF16();
  using backend::onednn::lowered_conv2d_bf16_op;
  check_bf16_convolution<lowered_conv2d_bf16_op>({simd::activation::none, 4, 1, false, 1});
  check_bf16_convolution<lowered_conv2d_bf16_op>({simd::activation::relu, 3, 1, false, 1});
}
static_assert(std::is_same_v<OneDnnBf16::op<Node<Conv2d<24, 1, 1, 0, false>, Shape<16, 4, 4>, NoActivation, 0, 0>>,
                             backend::onednn::lowered_conv2d_bf16_op>);

// The gathered forms are f32 only: asked for a strided layer in bf16, the op refuses with a sentence at set-up.
TEST(onednn_bf16, lowered_conv2d_op_refuses_a_gathered_layer_in_bf16) {
  SKIP_WITHOUT_BF16();
  using namespace backend::onednn;
  OneDnnBf16::context ctx({.threads = 1});
  const backend::Conv2dConfig c{2, 8, 4, 4, 8, 2, 2, 1, 2, 0, false, simd::activation::none};
  std::vector<float> w(64), dw(64);
  lowered_conv2d_op op;
  try {
    op.setup(ctx, plain_desc(2, 8, 4, 4), c, ParamSlots{w.data(), nullptr, dw.data(), nullptr}, true, dt::bf16);
    FAIL() << "a strided 1x1 layer was set up in bf16";
  } catch (const backend_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("in bf16 only a 1x1 kernel at stride 1 without padding is lowered"), std::string::npos) << what;
  }
}
static_assert(std::is_same_v<OneDnnBf16::op<Node<Conv2d<24, 1, 2, 0, false>, Shape<16, 4, 4>, NoActivation, 0, 0>>,
                             backend::onednn::conv2d_bf16_op>,
              "a strided 1x1 kernel gathers its patches, which the bf16 form does not");
static_assert(std::is_same_v<OneDnnBf16::op<Node<Conv2d<24, 1, 1, 0, false>, Shape<16, 8, 8>, NoActivation, 0, 0>>,
                             backend::onednn::conv2d_bf16_op>);

// ResNet-50's bottlenecks on 4x4 and 2x2 images: their 1x1 layers as the bf16 product over the image, reading the
// f32 input (converted) or the bf16 output of a residual's ReLU and writing bf16 for batch norm (a fused ReLU's f32
// in the last), their strided projection on oneDNN's convolution with the lowered backward weights. The bounds of the
// tests above: this checks the chain of types and layouts from op to op, the test above each layer's values against
// exact sums.
using PointwiseNet = Sequential<Input<16, 4, 4>, nets::Bottleneck<4>, nets::Bottleneck<8, 2>, Conv2d<8, 1>, ReLU, Flatten,
                                Dense<4>>;

TEST(onednn_bf16, gradients_of_bottlenecks_on_small_images_equal_f32_within_bf16_rounding) {
  SKIP_WITHOUT_BF16();
  const double worst = test::expect_equivalent<PointwiseNet, OneDnn, OneDnnBf16>(
      {.batch = 8, .seed = 7, .tol = kBf16Tolerance, .parameter_tol = kBf16ParameterTolerance,
       .batch_norm_bias_shift = 3});
  EXPECT_GT(worst, 1e-5) << "no bf16 rounding visible: are the primitives still f32?";
}

// ReLU6 on a bf16 tensor (a residual sum's, on OneDnnBf16) is oneDNN's clip_v2 in bf16, forward and backward from
// its output: on values exact in bf16 on either side of both kinks and on them, the output is the clamp exactly
// and the gradient passes strictly between 0 and 6 (0 at the kinks, as PyTorch's). Compared through whole nets
// instead, bf16 rounding moves some outputs next to 6 (bf16 steps by 2^-5 there) across the kink.
TEST(onednn_bf16, relu6_on_a_bf16_tensor_clips_to_0_6_and_passes_the_gradient_strictly_between) {
  SKIP_WITHOUT_BF16();
  using namespace backend::onednn;
  OneDnnBf16::context ctx({.threads = 1});
  std::vector<float> x = {-100.0f, -3.0f, -0.5f, 0.0f, 0.125f, 0.25f, 1.5f, 3.0f,
                          5.5f,    5.96875f, 6.0f, 6.03125f, 6.5f, 7.0f, 100.0f, 2.0f};
  std::vector<float> dy(x.size());
  for (std::size_t i = 0; i < dy.size(); ++i) dy[i] = float(i + 1);  // exact in bf16
  const desc f32_md = plain_desc(1, int(x.size()), 1, 1), bf16_md({1, int(x.size()), 1, 1}, dt::bf16, tag::nchw);
  const auto to_bf16_memory = [&](std::vector<float>& v) {
    memory plain(f32_md, ctx.engine(), v.data()), out(bf16_md, ctx.engine());
    dnnl::reorder(plain, out).execute(ctx.stream(), plain, out);
    ctx.stream().wait();
    return out;
  };
  const memory src = to_bf16_memory(x), diff_dst = to_bf16_memory(dy);
  activation_op op;
  op.setup(ctx, bf16_md, simd::activation::relu6, true);
  EXPECT_EQ(backend::onednn::compat::data_type_of(op.dst_desc()), dt::bf16);
  op.bind_diff_dst(ctx, bf16_md);
  op.forward(ctx, src);
  op.backward(ctx, src, diff_dst);
  ctx.stream().wait();
  std::vector<float> y(x.size()), dx(x.size());
  to_plain(ctx, op.dst(), y.data());
  to_plain(ctx, op.diff_src(), dx.data());
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(y[i], std::clamp(x[i], 0.0f, 6.0f)) << "x = " << x[i];
    EXPECT_EQ(dx[i], x[i] > 0 && x[i] < 6 ? dy[i] : 0.0f) << "x = " << x[i];
  }
}

// A bf16 run saves its f32 master weights, running statistics and momentum; a new trainer that resumes ends
// bit for bit where the run that was not stopped ends (oneDNN's bf16 kernels are deterministic on fixed threads).
TEST(onednn_bf16, checkpoint_round_trip_resumes_bit_for_bit) {
  SKIP_WITHOUT_BF16();
  const fs::path dir = fs::temp_directory_path() / ("sinew-test-bf16-checkpoint-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto data = loader_for(quadrants(96, 3), true);
  auto state = [](auto& t) {
    std::vector<float> all(t.model().parameters().begin(), t.model().parameters().end());
    all.insert(all.end(), t.model().buffers().begin(), t.model().buffers().end());
    return all;
  };
  Trainer<Net, OneDnnBf16> whole(kOptions, kSgd);
  whole.train_steps(data, 4);
  whole.train_steps(data, 3);
  {
    Trainer<Net, OneDnnBf16> first(kOptions, kSgd);
    first.train_steps(data, 4);
    first.save_checkpoint(dir);
  }
  Trainer<Net, OneDnnBf16> resumed(kOptions, kSgd);
  resumed.resume(dir);
  EXPECT_EQ(resumed.steps_done(), 4);
  resumed.train_steps(data, 3);
  const auto a = state(whole), b = state(resumed);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << "the resumed run differs";
  fs::remove_all(dir);
}

}  // namespace
