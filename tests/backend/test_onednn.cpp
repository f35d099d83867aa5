// The OneDnn backend's forward passes against naive double-precision references, with parameters read
// from the flat buffer in PyTorch's layout (so the layout convention is checked too).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "../support/reference.hpp"
#include "sinew/backend/onednn.hpp"
#include "sinew/backend/simd/dropout.hpp"
#include "sinew/model.hpp"
#include "sinew/nets/lenet5.hpp"

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

// compat::with_data_type re-types a descriptor in its own layout, plain or blocked, on either major of oneDNN (3 has
// no setter; compat.hpp finds the layout again among the format tags): the bytes a bf16 tensor takes between layers
// and the f32 copy that f32_input reorders it into.
TEST(onednn_compat, with_data_type_keeps_plain_and_blocked_layouts) {
  using backend::onednn::compat::with_data_type;
  using backend::onednn::compat::data_type_of;
  using backend::onednn::compat::dims_of;
  using tag = backend::onednn::tag;
  using dt = backend::onednn::dt;
  const dnnl::memory::dims shape{3, 20, 5, 7};
  for (const tag t : {tag::nchw, tag::nhwc, tag::nChw8c, tag::nChw16c}) {
    const backend::onednn::desc f32(shape, dt::f32, t);
    const backend::onednn::desc bf16 = with_data_type(f32, dt::bf16);
    EXPECT_EQ(data_type_of(bf16), dt::bf16);
    EXPECT_EQ(dims_of(bf16), shape);
    EXPECT_TRUE(bf16 == backend::onednn::desc(shape, dt::bf16, t)) << "format tag " << int(t);
    EXPECT_EQ(bf16.get_size() * 2, f32.get_size()) << "format tag " << int(t);
    EXPECT_TRUE(with_data_type(bf16, dt::f32) == f32) << "format tag " << int(t);
  }
  // A strided sub-tensor has no tag: its strides carry over.
  const backend::onednn::desc whole({4, 8}, dt::f32, tag::ab);
  const backend::onednn::desc part = whole.submemory_desc({4, 3}, {0, 2});
  EXPECT_TRUE(with_data_type(part, dt::f32) == part);
}

// Where element (o, c, h, w) of an O x C x 3 x 3 weight lies in oneDNN's OIhw16i16o (ABcd16b16a) layout: blocks of 16
// output and 16 input channels, the output channel fastest; C rounded up to whole blocks.
std::size_t oihw16i16o_offset(int o, int c, int h, int w, int in_channels) {
  const int in_blocks = (in_channels + 15) / 16;
  return ((((std::size_t(o / 16) * in_blocks + c / 16) * 3 + h) * 3 + w) * 16 + c % 16) * 16 + o % 16;
}

// sinew's own reorder (backend/onednn/reorder.hpp) against the layout's definition: a 4 x 17 x 3 x 3 weight into
// 16 x 16 blocks (the 17th input channel alone in its block, 15 channels and 12 outputs of padding, all zero) and
// back; into bf16, each element the nearest bf16. The loop is what the OneDnn backend runs where oneDNN's reorder
// gets padded layouts wrong, so it is checked on every machine, not only there.
TEST(onednn_reorder, own_loop_puts_each_element_where_the_blocked_layout_says) {
  using namespace backend::onednn;
  const dims shape{4, 17, 3, 3};
  const desc plain(shape, dt::f32, tag::oihw), blocked(shape, dt::f32, tag::ABcd16b16a);
  ASSERT_TRUE(own_reorder::padded(blocked));
  ASSERT_FALSE(own_reorder::padded(plain));
  std::vector<float> w(4 * 17 * 9), out(physical_floats(blocked), -1.0f), back(w.size(), -1.0f);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = 0.5f + float(i);
  own_reorder(plain, blocked).run(w.data(), out.data());
  std::vector<float> want(out.size(), 0.0f);
  for (int o = 0; o < 4; ++o)
    for (int c = 0; c < 17; ++c)
      for (int h = 0; h < 3; ++h)
        for (int x = 0; x < 3; ++x) want[oihw16i16o_offset(o, c, h, x, 17)] = w[((o * 17 + c) * 3 + h) * 3 + x];
  EXPECT_EQ(out, want);
  own_reorder(blocked, plain).run(out.data(), back.data());
  EXPECT_EQ(back, w);

  const desc bf16(shape, dt::bf16, tag::ABcd16b16a);
  std::vector<std::uint16_t> half(bf16.get_size() / 2, 0xffff);
  std::vector<float> fine(w.size());
  for (std::size_t i = 0; i < fine.size(); ++i) fine[i] = 1.0f + float(i) / 1024.0f;  // needs rounding to bf16
  own_reorder(plain, bf16).run(fine.data(), half.data());
  for (int o = 0; o < 4; ++o)
    for (int c = 0; c < 17; ++c)
      for (int h = 0; h < 3; ++h)
        for (int x = 0; x < 3; ++x)
          ASSERT_EQ(half[oihw16i16o_offset(o, c, h, x, 17)], to_bf16(fine[((o * 17 + c) * 3 + h) * 3 + x]))
              << o << " " << c << " " << h << " " << x;
  EXPECT_EQ(half[oihw16i16o_offset(5, 20, 1, 1, 17)], 0) << "padding";
}

// The backend's conversion of padded weights, whichever way it runs here (oneDNN's reorder, or the loop where the
// probe found oneDNN's wrong: on a CPU that reports no cache sizes oneDNN 3.7.2 dropped the 17th channel's middle
// tap), puts every element in place, and the probe's verdict holds up: where it trusts oneDNN, oneDNN's reorders
// of padded weights and activations, f32 and bf16, equal the loop's.
TEST(onednn_reorder, padded_weights_arrive_whole_whichever_way_the_backend_converts) {
  using namespace backend::onednn;
  context ctx({.threads = 2});
  const dims shape{4, 17, 3, 3};
  const desc plain(shape, dt::f32, tag::oihw), blocked(shape, dt::f32, tag::ABcd16b16a);
  std::vector<float> w(4 * 17 * 9);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = 1.0f + float(i);
  converter to_blocked;
  to_blocked.setup(ctx, plain, blocked);
  memory user(plain, ctx.engine(), w.data());
  const memory& out = to_blocked(ctx, user);
  ctx.stream().wait();
  const auto* got = static_cast<const float*>(out.get_data_handle());
  for (int o = 0; o < 4; ++o)
    for (int c = 0; c < 17; ++c)
      for (int h = 0; h < 3; ++h)
        for (int x = 0; x < 3; ++x)
          ASSERT_EQ(got[oihw16i16o_offset(o, c, h, x, 17)], w[((o * 17 + c) * 3 + h) * 3 + x])
              << "element (" << o << ", " << c << ", " << h << ", " << x << ")";
  std::vector<float> back(w.size(), -1.0f);
  to_plain(ctx, out, back.data());
  EXPECT_EQ(back, w);

  const bool sound = onednn_reorders_sound(ctx.engine());
  EXPECT_EQ(reorder_runs_own_loop(ctx.engine(), plain, blocked), !sound);
  EXPECT_FALSE(reorder_runs_own_loop(ctx.engine(), desc({16, 16, 3, 3}, dt::f32, tag::oihw),
                                     desc({16, 16, 3, 3}, dt::f32, tag::ABcd16b16a)))
      << "unpadded layouts stay with oneDNN";
  if (!sound) {
    std::printf("oneDNN's reorders of padded layouts are unsound here: the backend converts them itself\n");
    return;
  }
  const std::pair<dims, tag> layouts[] = {{{4, 17, 3, 3}, tag::ABcd16b16a}, {{20, 3, 5, 5}, tag::ABcd8b8a},
                                          {{3, 17, 9, 9}, tag::aBcd16b},    {{2, 20, 4, 5}, tag::aBcd8b},
                                          {{2, 20, 4, 5}, tag::acdb}};
  for (const auto& [d, t] : layouts)
    for (const dt type : {dt::f32, dt::bf16}) {
      const desc from(d, dt::f32, tag::abcd), to(d, type, t);
      std::vector<float> source(from.get_size() / 4);
      for (std::size_t i = 0; i < source.size(); ++i) source[i] = float(i % 251) / 7.0f;
      std::vector<std::uint8_t> theirs(to.get_size(), 0xaa), ours(to.get_size(), 0x55);
      memory src(from, ctx.engine(), source.data()), dst(to, ctx.engine(), theirs.data());
      dnnl::reorder(src, dst).execute(ctx.stream(), src, dst);
      ctx.stream().wait();
      own_reorder(from, to).run(source.data(), ours.data());
      EXPECT_EQ(theirs, ours) << "format tag " << int(t) << ", data type " << int(type);
    }
}

// The loop walks tiles of the two innermost dimensions with offsets from per-dimension tables; it must agree with
// oneDNN's reorder byte for byte on layouts of one to five dimensions, nested blocks of one dimension (bf16
// weights' 8b16a2b), blocked to blocked, plain to plain and either data type, in both directions, and on tensors
// large enough to be split over the threads. Padded layouts are compared only where the probe trusts oneDNN's
// reorder of them (the test above checks the loop's padding against the layout's definition everywhere).
TEST(onednn_reorder, own_loop_agrees_with_onednn_on_every_shape_of_layout) {
  using namespace backend::onednn;
  context ctx({.threads = 2});
  const bool sound = onednn_reorders_sound(ctx.engine());
  struct pair {
    dims shape;
    tag from, to;
  };
  const pair pairs[] = {
      {{1000}, tag::a, tag::a},
      {{37, 29}, tag::ab, tag::ba},
      {{48, 32}, tag::ab, tag::AB16b16a},
      {{40, 23}, tag::ab, tag::AB16b16a},  // padded in both dimensions
      {{5, 32, 7, 9}, tag::nchw, tag::nChw16c},
      {{42, 24, 28, 28}, tag::nchw, tag::nChw16c},  // padded, and split over the threads
      {{4, 32, 5, 5}, tag::nChw16c, tag::nChw8c},
      {{3, 20, 5, 5}, tag::nChw16c, tag::nChw8c},
      {{64, 48, 3, 3}, tag::oihw, tag::ABcd8b16a2b},
      {{64, 40, 3, 3}, tag::oihw, tag::ABcd8b16a2b},
      {{512, 256, 3, 3}, tag::oihw, tag::ABcd16b16a},  // split over the threads
      {{2, 32, 16, 3, 3}, tag::goihw, tag::aBCde16c16b},
      {{4, 8, 4, 3, 3}, tag::goihw, tag::aBCde16c16b},  // grouped, four channels a group padded to 16
      {{2, 3, 4, 5, 6}, tag::abcde, tag::acdeb},
  };
  int compared = 0;
  for (const auto& [shape, from_tag, to_tag] : pairs)
    for (const dt from_type : {dt::f32, dt::bf16})
      for (const dt to_type : {dt::f32, dt::bf16})
        for (const bool back : {false, true}) {
          const desc a(shape, from_type, back ? to_tag : from_tag), b(shape, to_type, back ? from_tag : to_tag);
          if (!sound && (own_reorder::padded(a) || own_reorder::padded(b))) continue;
          std::vector<std::uint8_t> source(a.get_size());
          if (from_type == dt::f32) {
            auto* f = reinterpret_cast<float*>(source.data());
            for (std::size_t i = 0; i < source.size() / 4; ++i) f[i] = float(i % 1021) / 3.0f - 170.0f;
          } else {
            auto* h = reinterpret_cast<std::uint16_t*>(source.data());
            for (std::size_t i = 0; i < source.size() / 2; ++i) h[i] = to_bf16(float(i % 509) / 5.0f - 50.0f);
          }
          std::vector<std::uint8_t> theirs(b.get_size(), 0xaa), ours(b.get_size(), 0x55);
          memory src(a, ctx.engine(), source.data()), dst(b, ctx.engine(), theirs.data());
          dnnl::reorder(src, dst).execute(ctx.stream(), src, dst);
          ctx.stream().wait();
          own_reorder(a, b).run(source.data(), ours.data());
          ASSERT_EQ(theirs, ours) << shape.size() << "-D, " << shape[0] << " x ..., tags " << int(from_tag)
                                  << " -> " << int(to_tag) << (back ? " backwards" : "") << ", types "
                                  << int(from_type) << " -> " << int(to_type);
          ++compared;
        }
  EXPECT_EQ(compared, sound ? 112 : 72);
  if (!sound) std::printf("oneDNN's reorders of padded layouts are unsound here: compared unpadded layouts only\n");
}

TEST(onednn_forward, conv2d_k3_s2_p1_matches_reference) {
  Fixture<Sequential<Input<3, 9, 9>, Conv2d<5, 3, 2, 1>>> f;
  const float* w = f.params();
  expect_close(f.run(), ref::conv2d(f.x, w, w + 5 * 3 * 9, 3, 3, 9, 9, 5, 3, 2, 1));
}

// Kernel taps that only meet padding are dropped (onednn/conv2d.hpp); the output must not change.
using backend::onednn::used_taps;
static_assert(used_taps(1, 1, 3, 1, 1).first == 1 && used_taps(1, 1, 3, 1, 1).count == 1);  // centre tap only
static_assert(used_taps(2, 1, 3, 2, 1).first == 1 && used_taps(2, 1, 3, 2, 1).count == 2);  // 2x2 -> 1x1, stride 2
static_assert(used_taps(2, 2, 3, 1, 1).count == 3);  // every tap meets the image at some position
static_assert(used_taps(9, 5, 3, 2, 1).count == 3 && used_taps(9, 5, 3, 2, 1).pad_r == 1);
static_assert(used_taps(1, 1, 7, 1, 3).first == 3 && used_taps(1, 1, 7, 1, 3).pad_l == 0);

TEST(onednn_forward, conv2d_on_a_1x1_image_uses_the_centre_tap_like_the_full_kernel) {
  Fixture<Sequential<Input<6, 1, 1>, Conv2d<5, 3, 1, 1>>> f;
  const float* w = f.params();
  expect_close(f.run(), ref::conv2d(f.x, w, w + 5 * 6 * 9, 3, 6, 1, 1, 5, 3, 1, 1));
}

TEST(onednn_forward, conv2d_trimmed_in_one_dimension_matches_reference) {
  Fixture<Sequential<Input<3, 1, 6>, Conv2d<4, 3, 2, 1>>> f;  // rows trimmed to the centre, columns kept
  const float* w = f.params();
  expect_close(f.run(), ref::conv2d(f.x, w, w + 4 * 3 * 9, 3, 3, 1, 6, 4, 3, 2, 1));
}

// On an image no larger than the kernel the convolution runs as an inner product (onednn/small_conv2d.hpp).
TEST(onednn_forward, conv2d_on_a_2x2_image_as_inner_product_matches_reference) {
  Fixture<Sequential<Input<3, 2, 2>, Conv2d<4, 3, 1, 1>>> f;
  const float* w = f.params();
  expect_close(f.run(), ref::conv2d(f.x, w, w + 4 * 3 * 9, 3, 3, 2, 2, 4, 3, 1, 1));
}

TEST(onednn_forward, conv2d_3x3_image_stride_2_as_inner_product_matches_reference) {
  Fixture<Sequential<Input<5, 3, 3>, Conv2d<6, 3, 2, 1>>> f;
  const float* w = f.params();
  expect_close(f.run(), ref::conv2d(f.x, w, w + 6 * 5 * 9, 3, 5, 3, 3, 6, 3, 2, 1));
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

// The input gradient of a pooling op after its forward on xm, for the plain NCHW output gradient dy (reordered
// into the op's output layout first), as plain NCHW.
std::vector<float> pooling_input_gradient(OneDnn::context& ctx, backend::onednn::pooling_op& op,
                                          const backend::onednn::memory& xm, std::vector<float> dy,
                                          std::size_t input_floats) {
  using namespace backend::onednn;
  std::vector<float> dy_layout(physical_floats(op.dst_desc()));
  memory dy_plain(plain_like(op.dst_desc()), ctx.engine(), dy.data()), dym(op.dst_desc(), ctx.engine(), dy_layout.data());
  dnnl::reorder(dy_plain, dym).execute(ctx.stream(), dy_plain, dym);
  op.bind_diff_dst(ctx, op.dst_desc());
  op.backward(ctx, xm, dym);
  std::vector<float> dx(input_floats);
  to_plain(ctx, op.diff_src(), dx.data());
  return dx;
}

// Max pooling on plain NCHW of 8 channels or more, which oneDNN runs only in its C++ loop (simple_nchw), reorders
// its input to the blocked layout first (pooling.hpp; AlexNet's first pooling without AVX-512 kernels): the output
// and the input gradient (each output's gradient at its window's maximum) are PyTorch's either way.
TEST(onednn_pooling, max_pool_on_plain_nchw_runs_blocked_and_matches_reference) {
  using namespace backend::onednn;
  constexpr int kN = 3, kC = 16, kH = 15, kOut = 7;
  OneDnn::context ctx{BackendOptions{}};
  const auto normals = [](std::size_t n, std::uint64_t seed) {
    Rng rng(seed);
    std::vector<float> v(n);
    for (float& e : v) e = rng.normal();
    return v;
  };
  std::vector<float> x = normals(kN * kC * kH * kH, 5);
  const desc plain({kN, kC, kH, kH}, dt::f32, tag::nchw);
  const memory xm(plain, ctx.engine(), x.data());
  pooling_op op;
  op.setup(ctx, plain, kN, kC, kOut, kOut, 3, 2, 0, dnnl::algorithm::pooling_max, true);
  const auto on_plain =
      backend::onednn::compat::pooling_forward(ctx.engine(), dnnl::prop_kind::forward_training, dnnl::algorithm::pooling_max,
                                               plain, desc({kN, kC, kOut, kOut}, dt::f32, tag::any), {2, 2}, {3, 3},
                                               {0, 0}, {0, 0});
  const bool loop_on_plain = std::string(on_plain.impl_info_str()).starts_with("simple");
  EXPECT_EQ(op.src_desc() == plain, !loop_on_plain) << "oneDNN on plain NCHW: " << on_plain.impl_info_str();
  op.forward(ctx, xm);
  std::vector<float> y(kN * kC * kOut * kOut);
  to_plain(ctx, op.dst(), y.data());
  expect_close(y, ref::pool(x, kN, kC, kH, kH, 3, 2, 0, true));

  const std::vector<float> dy = normals(y.size(), 6);
  const std::vector<float> dx = pooling_input_gradient(ctx, op, xm, dy, x.size());
  std::vector<double> want(x.size(), 0.0);
  for (int p = 0; p < kN * kC; ++p)
    for (int oy = 0; oy < kOut; ++oy)
      for (int ox = 0; ox < kOut; ++ox) {
        int best = p * kH * kH + 2 * oy * kH + 2 * ox;
        for (int ky = 0; ky < 3; ++ky)
          for (int kx = 0; kx < 3; ++kx) {
            const int at = p * kH * kH + (2 * oy + ky) * kH + 2 * ox + kx;
            if (x[at] > x[best]) best = at;
          }
        want[best] += dy[(p * kOut + oy) * kOut + ox];
      }
  expect_close(dx, want);
}

// Average pooling over non-overlapping windows of plain NCHW with at most 16 channels (what the thin convolutions
// leave) runs on sinew's own loops (simd/avg_pool.hpp): PyTorch's output and input gradient, with the rows and
// columns past the last whole window (9 x 11 at 2 x 2) getting no gradient; 17 channels stay on oneDNN.
TEST(onednn_pooling, avg_pool_on_thin_plain_nchw_runs_own_loops_and_matches_reference) {
  using namespace backend::onednn;
  OneDnn::context ctx{BackendOptions{}};
  for (const auto [n, c, h, w, k] : {std::array{3, 6, 9, 11, 2}, std::array{2, 16, 9, 9, 3}, std::array{2, 17, 8, 8, 2}}) {
    SCOPED_TRACE("N " + std::to_string(n) + " C " + std::to_string(c) + " " + std::to_string(h) + "x" +
                 std::to_string(w) + " window " + std::to_string(k));
    Rng rng{std::uint64_t(c)};
    std::vector<float> x(std::size_t(n) * c * h * w), dy(std::size_t(n) * c * (h / k) * (w / k));
    for (float& v : x) v = rng.normal();
    for (float& v : dy) v = rng.normal();
    const desc plain({n, c, h, w}, dt::f32, tag::nchw);
    const memory xm(plain, ctx.engine(), x.data());
    pooling_op op;
    op.setup(ctx, plain, n, c, h / k, w / k, k, k, 0, dnnl::algorithm::pooling_avg_include_padding, true);
    EXPECT_EQ(op.runs_own_loops(), c <= 16);
    op.forward(ctx, xm);
    std::vector<float> y(dy.size());
    to_plain(ctx, op.dst(), y.data());
    expect_close(y, ref::pool(x, n, c, h, w, k, k, 0, false));

    const std::vector<float> dx = pooling_input_gradient(ctx, op, xm, dy, x.size());
    std::vector<double> want(x.size(), 0.0);
    for (int p = 0; p < n * c; ++p)
      for (int i = 0; i < h / k * k; ++i)
        for (int j = 0; j < w / k * k; ++j)
          want[(std::size_t(p) * h + i) * w + j] = dy[(std::size_t(p) * (h / k) + i / k) * (w / k) + j / k] / (k * k);
    expect_close(dx, want);
  }
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

/// Parameters drawn away from BatchNorm's (1, 0) start so that a swapped gamma and beta would show.
void randomize(std::span<float> v, std::uint64_t seed, float lo, float hi) {
  Rng rng(seed);
  for (float& x : v) x = rng.uniform(lo, hi);
}

TEST(onednn_forward, batch_norm2d_training_uses_batch_statistics) {
  Fixture<Sequential<Input<5, 3, 4>, BatchNorm2d>> f;
  randomize(f.model.parameters(), 1, 0.5f, 1.5f);
  std::vector<double> mean, variance;
  ref::channel_statistics(f.x, 3, 5, 12, mean, variance, false);
  const float* w = f.params();
  expect_close(f.run(), ref::batch_norm(f.x, mean, variance, w, w + 5, 3, 5, 12));
}

TEST(onednn_forward, batch_norm2d_running_statistics_follow_pytorch) {
  // running = 0.9 running + 0.1 batch, with the unbiased variance; from (0, 1), over two steps.
  Fixture<Sequential<Input<4, 3, 3>, BatchNorm2d>> f;
  std::vector<double> want_mean(4, 0.0), want_var(4, 1.0), mean, variance;
  for (int step = 0; step < 2; ++step) {
    for (float& v : f.x) v = v * 1.5f + 0.7f;  // a different batch each step, with a nonzero mean
    f.run();
    ref::channel_statistics(f.x, 3, 4, 9, mean, variance, true);
    for (int c = 0; c < 4; ++c) {
      want_mean[c] = 0.9 * want_mean[c] + 0.1 * mean[c];
      want_var[c] = 0.9 * want_var[c] + 0.1 * variance[c];
    }
  }
  const auto b = f.model.buffers();
  for (int c = 0; c < 4; ++c) {
    EXPECT_NEAR(b[c], want_mean[c], 1e-5) << "running_mean " << c;
    EXPECT_NEAR(b[4 + c], want_var[c], 1e-5) << "running_var " << c;
  }
}

TEST(onednn_forward, batch_norm2d_eval_uses_running_statistics_and_keeps_them) {
  Fixture<Sequential<Input<3, 4, 4>, BatchNorm2d>> f;
  randomize(f.model.parameters(), 2, 0.5f, 1.5f);
  const auto b = f.model.buffers();
  randomize(b.subspan(0, 3), 3, -1.0f, 1.0f);
  randomize(b.subspan(3, 3), 4, 0.5f, 2.0f);
  const std::vector<float> before(b.begin(), b.end());
  const std::vector<double> mean(b.begin(), b.begin() + 3), variance(b.begin() + 3, b.begin() + 6);
  f.model.set_training(false);
  const float* w = f.params();
  expect_close(f.run(), ref::batch_norm(f.x, mean, variance, w, w + 3, 3, 3, 16));
  EXPECT_TRUE(std::equal(before.begin(), before.end(), b.begin())) << "evaluation changed the running statistics";
  EXPECT_EQ(f.model.step(), 0u) << "evaluation counted as a training step";
}

TEST(onednn_forward, conv2d_batch_norm2d_fused_relu_in_blocked_layout) {
  // 16 channels: oneDNN picks a blocked layout for the convolution's output, and batch norm keeps it.
  Fixture<Sequential<Input<3, 6, 6>, Conv2d<16, 3, 1, 1>, BatchNorm2d, ReLU>> f;
  const std::size_t bn = Model<Sequential<Input<3, 6, 6>, Conv2d<16, 3, 1, 1>>, OneDnn>::kParamSpan;
  randomize(f.model.parameters().subspan(bn, 32), 5, 0.5f, 1.5f);
  const float* w = f.params();
  const auto conv = ref::conv2d(f.x, w, w + 16 * 27, 3, 3, 6, 6, 16, 3, 1, 1);
  const std::vector<float> z(conv.begin(), conv.end());
  std::vector<double> mean, variance;
  ref::channel_statistics(z, 3, 16, 36, mean, variance, false);
  auto want = ref::batch_norm(z, mean, variance, w + bn, w + bn + 16, 3, 16, 36);
  for (double& v : want) v = ref::relu(v);
  expect_close(f.run(), want, 2e-4);
}

TEST(onednn_forward, batch_norm2d_training_on_one_value_per_channel_is_a_shape_error) {
  OneDnn::context ctx{BackendOptions{}};
  Model<Sequential<Input<4, 1, 1>, BatchNorm2d>, OneDnn> model(ctx);
  const std::vector<float> x(4, 1.0f);
  EXPECT_THROW(model.forward(x, 1), shape_error);
  model.set_training(false);
  EXPECT_NO_THROW(model.forward(x, 1));
}

using DropNet = Sequential<Input<3, 16, 16>, Dropout<30>>;

TEST(onednn_forward, dropout30_zeroes_about_30_percent_and_scales_the_rest) {
  Fixture<DropNet> f;
  const auto y = f.run();
  std::size_t dropped = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (y[i] == 0.0f) {
      ++dropped;
    } else {
      ASSERT_NEAR(y[i], f.x[i] / 0.7f, 1e-6f * (1 + std::fabs(y[i]))) << "at " << i;
    }
  }
  const double fraction = double(dropped) / double(y.size());
  EXPECT_NEAR(fraction, 0.3, 0.03) << dropped << " of " << y.size();
}

TEST(onednn_forward, dropout_mask_is_the_scalar_reference_and_replays_by_step) {
  // The input is plain NCHW, so physical and logical indices agree: the SIMD kernel must draw the mask of
  // simd::dropout_keeps for the seed the model derives; the same step gives the same mask, the next another.
  Fixture<DropNet> f;
  const auto first = f.run();
  EXPECT_EQ(f.model.step(), 1u);
  const auto second = f.run();
  f.model.set_step(0);
  const auto replay = f.run();
  EXPECT_EQ(first, replay);
  EXPECT_NE(first, second);
  const std::uint64_t seed = mix64(5 ^ mix64(0));  // the Model's: mix64(seed ^ mix64(step * ops + node))
  std::size_t agree = 0;
  for (std::size_t i = 0; i < first.size(); ++i) agree += (first[i] != 0.0f) == simd::dropout_keeps(i, 0.3f, seed);
  EXPECT_EQ(agree, first.size());
}

TEST(onednn_forward, dropout_is_deterministic_given_the_model_seed) {
  Fixture<DropNet> a, b;
  EXPECT_EQ(a.run(), b.run());
}

TEST(onednn_forward, dropout_eval_is_identity) {
  Fixture<DropNet> f;
  f.model.set_training(false);
  EXPECT_EQ(f.run(), f.x);
}

TEST(onednn_forward, global_avg_pool_is_the_channel_mean) {
  Fixture<Sequential<Input<4, 5, 3>, GlobalAvgPool>> f;
  expect_close(f.run(), ref::adaptive_avg_pool(f.x, 3, 4, 5, 3, 1, 1));
}

TEST(onednn_forward, adaptive_avg_pool_uniform_bins_6x6_to_3x2) {
  Fixture<Sequential<Input<2, 6, 6>, AdaptiveAvgPool<3, 2>>> f;
  expect_close(f.run(), ref::adaptive_avg_pool(f.x, 3, 2, 6, 6, 3, 2));
}

TEST(onednn_forward, adaptive_avg_pool_overlapping_bins_7x10_to_3x4) {
  Fixture<Sequential<Input<2, 7, 10>, AdaptiveAvgPool<3, 4>>> f;
  expect_close(f.run(), ref::adaptive_avg_pool(f.x, 3, 2, 7, 10, 3, 4));
}

TEST(onednn_forward, adaptive_avg_pool_upsamples_4x4_to_6x6) {
  Fixture<Sequential<Input<2, 4, 4>, AdaptiveAvgPool<6>>> f;
  expect_close(f.run(), ref::adaptive_avg_pool(f.x, 3, 2, 4, 4, 6, 6));
}

TEST(onednn_forward, adaptive_avg_pool_1x1_to_6x6_replicates_each_pixel_as_alexnet_on_64x64) {
  Fixture<Sequential<Input<16, 1, 1>, AdaptiveAvgPool<6, 6>>> f;
  const auto y = f.run();
  ASSERT_EQ(y.size(), 3u * 16 * 36);
  for (std::size_t p = 0; p < 3 * 16; ++p)
    for (int k = 0; k < 36; ++k) ASSERT_EQ(y[p * 36 + k], f.x[p]) << "plane " << p << " cell " << k;
}

TEST(onednn_forward, adaptive_avg_pool_after_blocked_conv_reads_pytorch_order) {
  Fixture<Sequential<Input<3, 7, 7>, Conv2d<16, 3>, AdaptiveAvgPool<3>>> f;
  const float* w = f.params();
  const auto conv = ref::conv2d(f.x, w, w + 16 * 27, 3, 3, 7, 7, 16, 3, 1, 0);
  expect_close(f.run(), ref::adaptive_avg_pool({conv.begin(), conv.end()}, 3, 16, 5, 5, 3, 3), 2e-4);
}

/// A Dense op set up directly on caller-owned parameters (as a Model's flat buffer holds them, PyTorch's layout).
struct DenseOnFlatParams {
  static constexpr int kC = 3, kH = 2, kW = 2, kIn = kC * kH * kW, kOut = 7;
  OneDnn::context ctx{BackendOptions{}};
  const int rows;  // the batch
  std::vector<float> x = normals(rows * kIn, 1), w = normals(kOut * kIn, 2), b = normals(kOut, 3);
  std::vector<float> dw = std::vector<float>(kOut * kIn), db = std::vector<float>(kOut);
  backend::onednn::memory xm;
  backend::onednn::dense_op op;
  explicit DenseOnFlatParams(bool four_d, int batch = 5) : rows(batch) {
    using namespace backend::onednn;
    const desc src = four_d ? desc({rows, kC, kH, kW}, dt::f32, tag::nchw) : desc({rows, kIn}, dt::f32, tag::nc);
    xm = memory(src, ctx.engine(), x.data());
    op.setup(ctx, src, rows, kOut, true, simd::activation::relu, ParamSlots{w.data(), b.data(), dw.data(), db.data()},
             true);
  }
  static std::vector<float> normals(int n, std::uint64_t seed) {
    Rng rng(seed);
    std::vector<float> v(static_cast<std::size_t>(n));
    for (float& e : v) e = rng.normal();
    return v;
  }
  std::vector<float> forward() {
    op.forward(ctx, xm);
    std::vector<float> y(rows * kOut);
    backend::onednn::to_plain(ctx, op.dst(), y.data());
    return y;
  }
  std::vector<double> want() const {
    auto y = ref::dense(x, w.data(), b.data(), rows, kIn, kOut);
    for (double& v : y) v = ref::relu(v);
    return y;
  }
};

// The Dense forward runs as a matmul that reads the weights where the optimizer and checkpoints see them
// (weighted_layer.hpp: inner_product_matmul): an update of the flat buffer in place is what the next forward
// computes with, on a 2-D input and on a 4-D one (weights seen as [Out, C, H, W]).
TEST(onednn_dense, forward_is_a_matmul_reading_the_flat_weights_in_place) {
  for (const bool four_d : {false, true}) {
    SCOPED_TRACE(four_d ? "4-D input" : "2-D input");
    DenseOnFlatParams f(four_d);
    EXPECT_EQ(f.op.forward_primitive_kind(), dnnl::primitive::kind::matmul);
    expect_close(f.forward(), f.want());
    for (float& v : f.w) v = -0.5f * v + 0.25f;  // an optimizer step, in place
    for (float& v : f.b) v += 1.0f;
    expect_close(f.forward(), f.want());
  }
}

// A Dense pass under dense_op::kSerialFlops runs on one thread (LeNet-5's 120->84 at batch 42: 0.85 MFLOP), computes
// what the reference does, and leaves the thread count as it found it; a large one (1024->1024: 88 MFLOP) and any
// layer on a one-thread context keep oneDNN's threading.
TEST(onednn_dense, small_passes_run_on_one_thread_and_give_the_threads_back) {
  using namespace backend::onednn;
  context ctx({.threads = 2});
  ASSERT_EQ(ctx.threads(), 2);
  const auto dense = [&](context& c, int batch, int in, int out, std::vector<float>& params) {
    params.assign(std::size_t(2 * (out * in + out)), 0.0f);
    Rng rng(4);
    for (int i = 0; i < out * in + out; ++i) params[std::size_t(i)] = 0.1f * rng.normal();
    auto op = std::make_unique<dense_op>();
    float* p = params.data();
    op->setup(c, desc({batch, in}, dt::f32, tag::nc), batch, out, true, simd::activation::tanh,
              ParamSlots{p, p + out * in, p + out * in + out, p + 2 * out * in + out}, true);
    return op;
  };
  std::vector<float> small_params, large_params;
  const auto small = dense(ctx, 42, 120, 84, small_params);
  EXPECT_TRUE(small->runs_on_one_thread());
  EXPECT_EQ(omp_get_max_threads(), 2) << "set-up gave the threads back";
  EXPECT_FALSE(dense(ctx, 42, 1024, 1024, large_params)->runs_on_one_thread());
  context alone({.threads = 1});
  EXPECT_FALSE(dense(alone, 42, 120, 84, large_params)->runs_on_one_thread()) << "nothing to hold back";
  omp_set_num_threads(2);

  std::vector<float> x = DenseOnFlatParams::normals(42 * 120, 7), dy = DenseOnFlatParams::normals(42 * 84, 8);
  const memory xm(desc({42, 120}, dt::f32, tag::nc), ctx.engine(), x.data());
  small->forward(ctx, xm);
  EXPECT_EQ(omp_get_max_threads(), 2) << "forward gave the threads back";
  std::vector<float> y(42 * 84);
  to_plain(ctx, small->dst(), y.data());
  auto want = ref::dense(x, small_params.data(), small_params.data() + 84 * 120, 42, 120, 84);
  for (double& v : want) v = std::tanh(v);
  expect_close(y, want);
  small->bind_diff_dst(ctx, small->dst_desc());
  memory dym(small->dst_desc(), ctx.engine(), dy.data());
  small->backward(ctx, xm, dym);
  EXPECT_EQ(omp_get_max_threads(), 2) << "backward gave the threads back";
  double bias_gradient = 0;  // of the first output: the sum over rows of dy (1 - y^2)
  for (std::size_t r = 0; r < 42; ++r) bias_gradient += double(dy[r * 84]) * (1 - want[r * 84] * want[r * 84]);
  EXPECT_NEAR(small_params[std::size_t(2 * 84 * 120 + 84)], bias_gradient, 1e-3 * (1 + std::fabs(bias_gradient)));
}

// At batch 1 to 3 the inner product's matrix-vector kernel is the faster, and keeps the forward.
TEST(onednn_dense, forward_of_fewer_than_four_rows_stays_an_inner_product) {
  DenseOnFlatParams one(false, 1), four(false, 4);
  EXPECT_EQ(one.op.forward_primitive_kind(), dnnl::primitive::kind::inner_product);
  EXPECT_EQ(four.op.forward_primitive_kind(), dnnl::primitive::kind::matmul);
  expect_close(one.forward(), one.want());
}

// Backward is still the inner product's, on the matmul's forward: gradients land in the flat buffer in PyTorch's
// layout (dW = dy^T x, db = column sums of dy, with ReLU's mask).
TEST(onednn_dense, backward_after_the_matmul_forward_writes_pytorch_layout_gradients) {
  using namespace backend::onednn;
  DenseOnFlatParams f(false);
  const auto y = f.forward();
  const auto dy_values = DenseOnFlatParams::normals(f.rows * f.kOut, 4);
  std::vector<float> dy_storage = dy_values;
  const memory dy(f.op.dst_desc(), f.ctx.engine(), dy_storage.data());
  f.op.bind_diff_dst(f.ctx, f.op.dst_desc());
  f.op.backward(f.ctx, f.xm, dy);
  f.ctx.stream().wait();
  for (int o = 0; o < f.kOut; ++o) {
    double want_db = 0;
    for (int n = 0; n < f.rows; ++n) want_db += y[n * f.kOut + o] > 0 ? dy_values[n * f.kOut + o] : 0.0;
    ASSERT_NEAR(f.db[o], want_db, 1e-4 * (1 + std::fabs(want_db))) << "bias " << o;
    for (int i = 0; i < f.kIn; ++i) {
      double want = 0;
      for (int n = 0; n < f.rows; ++n)
        if (y[n * f.kOut + o] > 0) want += double(dy_values[n * f.kOut + o]) * f.x[n * f.kIn + i];
      ASSERT_NEAR(f.dw[o * f.kIn + i], want, 1e-4 * (1 + std::fabs(want))) << "weight " << o << "," << i;
    }
  }
}

/// A Dense op without activation on caller-owned parameters, its backward data checked against dx = dy W.
struct DenseBackwardData {
  OneDnn::context ctx{BackendOptions{}};
  const int rows, in, out;
  std::vector<float> x, w, b, dw, db, dy;
  backend::onednn::memory xm, dym;
  backend::onednn::dense_op op;
  DenseBackwardData(int batch, int inputs, int outputs)
      : rows(batch), in(inputs), out(outputs), x(DenseOnFlatParams::normals(rows * in, 1)),
        w(DenseOnFlatParams::normals(out * in, 2)), b(DenseOnFlatParams::normals(out, 3)), dw(w.size()),
        db(b.size()), dy(DenseOnFlatParams::normals(rows * out, 4)) {
    using namespace backend::onednn;
    const desc src({rows, in}, dt::f32, tag::nc);
    xm = memory(src, ctx.engine(), x.data());
    op.setup(ctx, src, rows, out, true, simd::activation::none, ParamSlots{w.data(), b.data(), dw.data(), db.data()},
             true);
    dym = memory(op.dst_desc(), ctx.engine(), dy.data());
    op.bind_diff_dst(ctx, op.dst_desc());
  }
  /// Runs forward and backward; checks dx = dy W and dW = dy^T x, W and dW row-major [Out, In] (PyTorch's).
  void check_backward() {
    op.forward(ctx, xm);
    op.backward(ctx, xm, dym);
    std::vector<float> dx(std::size_t(rows) * in);
    backend::onednn::to_plain(ctx, op.diff_src(), dx.data());
    for (int n = 0; n < rows; ++n)
      for (int i = 0; i < in; ++i) {
        double want = 0;
        for (int o = 0; o < out; ++o) want += double(dy[n * out + o]) * w[std::size_t(o) * in + i];
        ASSERT_NEAR(dx[std::size_t(n) * in + i], want, 1e-4 * (1 + std::fabs(want))) << "dx " << n << "," << i;
      }
    for (int o = 0; o < out; ++o)
      for (int i = 0; i < in; ++i) {
        double want = 0;
        for (int n = 0; n < rows; ++n) want += double(dy[n * out + o]) * x[std::size_t(n) * in + i];
        ASSERT_NEAR(dw[std::size_t(o) * in + i], want, 1e-4 * (1 + std::fabs(want))) << "dW " << o << "," << i;
      }
  }
};

// Without AVX-512 kernels (an AVX2 CPU, or ONEDNN_MAX_CPU_ISA=AVX2 as `ctest --preset numerics-avx2` runs this
// file), backward data of an inner product whose rows are a multiple of 4 KiB (1024 inputs) runs as two matmuls
// from 32 rows on (weighted_layer.hpp: inner_product_split_backward_data); with them, on fewer rows or other
// widths it stays the inner product's. Either path reads W where the optimizer and checkpoints see it, row-major
// [Out, In]: dx = dy W before and after an update in place, and dW lands in the same layout.
TEST(onednn_dense, backward_data_of_4KiB_rows_is_split_only_without_avx512) {
  const bool avx512 = backend::onednn::onednn_runs_avx512();
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (cap && std::string(cap) == "AVX2") {
    EXPECT_FALSE(avx512) << "ONEDNN_MAX_CPU_ISA=AVX2";
  }
  const auto split = avx512 ? dnnl::primitive::kind::inner_product : dnnl::primitive::kind::matmul;
  DenseBackwardData aliased(32, 1024, 3), fewer_rows(31, 1024, 3), other_width(32, 1000, 3);
  EXPECT_EQ(aliased.op.backward_data_primitive_kind(), split) << (avx512 ? "AVX-512" : "no AVX-512");
  EXPECT_EQ(fewer_rows.op.backward_data_primitive_kind(), dnnl::primitive::kind::inner_product);
  EXPECT_EQ(other_width.op.backward_data_primitive_kind(), dnnl::primitive::kind::inner_product);
  for (DenseBackwardData* f : {&aliased, &fewer_rows, &other_width}) {
    SCOPED_TRACE(testing::Message() << f->rows << " rows, " << f->in << " inputs");
    f->check_backward();
    for (float& v : f->w) v = -0.5f * v + 0.25f;  // an optimizer step, in place
    f->check_backward();
  }
}

// A convolution on an image no larger than its kernel is an inner product too (small_conv2d.hpp), and so takes
// the matmul forward as well.
TEST(onednn_dense, small_image_conv2d_forward_is_a_matmul) {
  using namespace backend::onednn;
  OneDnn::context ctx{BackendOptions{}};
  const backend::Conv2dConfig c{4, 4, 2, 2, 5, 2, 2, 3, 1, 1, true, simd::activation::none};  // batch 4
  std::vector<float> w(5 * 4 * 9), b(5), dw(w.size()), db(b.size());
  small_conv2d_op op;
  op.setup(ctx, desc({4, 4, 2, 2}, dt::f32, tag::nchw), c, ParamSlots{w.data(), b.data(), dw.data(), db.data()},
           false);
  EXPECT_EQ(op.forward_primitive_kind(), dnnl::primitive::kind::matmul);
}

// A depthwise 3x3 layer on a 2x2 image (MobileNetV2's 384- and 576-channel layers at 32x32 input) computes its
// weights' and bias's gradients as sinew's pass over NHWC copies (depthwise_backward_weights.hpp), not as oneDNN's
// gemm convolution, which oneDNN 2.6 and 3.7 fall back to for its backward weights there on AVX2 and AVX-512. 200
// channels make two threads' shares of runs of 64 and a run of 8; stride 1 with padding 1 has every tap meet the
// image at some pixels and padding at others. The gradients are the sums in double: a tap reading the wrong pixel,
// a run written to the wrong channels or a missed share is off by a whole term.
TEST(onednn_conv2d, depthwise_backward_weights_on_a_2x2_image_is_sinews_pass_and_exact) {
  using namespace backend::onednn;
  OneDnn::context ctx({.threads = 2});
  constexpr int N = 3, C = 200, H = 2, K = 3;
  backend::Conv2dConfig c{N, C, H, H, C, H, H, K, 1, 1, true, simd::activation::none};
  c.groups = C;
  std::vector<float> x = DenseOnFlatParams::normals(N * C * H * H, 5), w = DenseOnFlatParams::normals(C * K * K, 6),
                     b = DenseOnFlatParams::normals(C, 7), dy = DenseOnFlatParams::normals(N * C * H * H, 8),
                     dw(w.size(), -1.0f), db(b.size(), -1.0f);
  const desc plain = plain_desc(N, C, H, H);
  conv2d_op op;
  op.setup(ctx, plain, c, ParamSlots{w.data(), b.data(), dw.data(), db.data()}, true);
  EXPECT_TRUE(op.backward_weights_depthwise())
      << "oneDNN took this layer's backward weights with a kernel of its own: the pass may be dropped here";
  op.bind_diff_dst(ctx, plain);
  const memory xm(plain, ctx.engine(), x.data()), dym(plain, ctx.engine(), dy.data());
  for (int pass = 0; pass < 2; ++pass) {  // twice: the second reuses the bound conversions
    op.forward(ctx, xm);
    op.backward(ctx, xm, dym);
  }
  ctx.stream().wait();
  const auto at = [](int n, int ch, int i, int j) { return ((n * C + ch) * H + i) * H + j; };
  for (int ch = 0; ch < C; ++ch) {
    double want_db = 0;
    for (int n = 0; n < N; ++n)
      for (int i = 0; i < H; ++i)
        for (int j = 0; j < H; ++j) want_db += dy[at(n, ch, i, j)];
    ASSERT_NEAR(db[ch], want_db, 1e-4 * (1 + std::fabs(want_db))) << "bias of channel " << ch;
    for (int ky = 0; ky < K; ++ky)
      for (int kx = 0; kx < K; ++kx) {
        double want = 0;
        for (int n = 0; n < N; ++n)
          for (int i = 0; i < H; ++i)
            for (int j = 0; j < H; ++j) {
              const int iy = i - 1 + ky, ix = j - 1 + kx;
              if (iy >= 0 && iy < H && ix >= 0 && ix < H) want += double(dy[at(n, ch, i, j)]) * x[at(n, ch, iy, ix)];
            }
        ASSERT_NEAR(dw[(ch * K + ky) * K + kx], want, 1e-4 * (1 + std::fabs(want)))
            << "channel " << ch << ", tap " << ky << "," << kx;
      }
  }
}

// Every name oneDNN gives its reference loops counts as one, and checked() says so on stderr: oneDNN 2.6 names
// its batch normalisation's "bnorm_ref:any", which the check of a name's first three letters let through silently;
// a name that contains "ref" elsewhere, or a kernel's, does not warn.
TEST(onednn_common, checked_warns_of_every_reference_loop_and_of_no_kernel) {
  using namespace backend::onednn;
  for (const char* name : {"ref:any", "ref_int8:any", "bnorm_ref:any"}) EXPECT_TRUE(names_reference_loop(name)) << name;
  for (const char* name : {"jit:avx512_core", "ncsp_bnorm:any", "brgemm:avx2", "simple_nchw:any", "gemm:jit",
                           "jit_uni_prefetch:avx2", ""})
    EXPECT_FALSE(names_reference_loop(name)) << name;
  OneDnn::context ctx({.threads = 1});
  const auto batch_norm_on = [&](tag t) {
    const desc d({2, 8, 4, 4}, dt::f32, t);
    return compat::batch_norm_forward(ctx.engine(), dnnl::prop_kind::forward_training, d, 1e-5f,
                                      dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift);
  };
  const std::string on_blocks_of_4 = batch_norm_on(tag::aBcd4b).impl_info_str();
  ASSERT_TRUE(names_reference_loop(on_blocks_of_4))
      << "oneDNN now has a kernel for batch norm on blocks of 4 channels (" << on_blocks_of_4
      << "): this test needs another primitive";
  if (std::getenv("SINEW_QUIET_REFERENCE")) GTEST_SKIP() << "SINEW_QUIET_REFERENCE is set: checked() warns of nothing";
  testing::internal::CaptureStderr();
  checked("batch norm on plain input in the reference-loop test", [&] { return batch_norm_on(tag::nchw); });
  checked("batch norm on blocks of 4 in the reference-loop test", [&] { return batch_norm_on(tag::aBcd4b); });
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("oneDNN runs batch norm on blocks of 4 in the reference-loop test on its slow reference"),
            std::string::npos)
      << said;
  EXPECT_EQ(said.find("plain input"), std::string::npos) << "oneDNN has a kernel for plain NCHW: " << said;
}

// An integer division by zero inside a oneDNN constructor (oneDNN 3.7.2 does this choosing some brgemm
// convolution kernels on some CPUs: division_fault_scope) ends the process with a sentence naming the library, its
// version and what was being created, by SIGFPE as before. Outside checked(), and once checked() returns (also
// from within another checked()), SIGFPE goes where it went before.
TEST(onednn_common, checked_names_a_division_by_zero_inside_a_constructor_and_puts_the_handler_back) {
  using namespace backend::onednn;
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto divide = [] {
    volatile int seven = 7, zero = 0;  // GCC turns 1 / x into a comparison: no division, no fault
    volatile int quotient = seven / zero;
    return int(quotient);
  };
  EXPECT_EXIT(checked("conv2d backward data in the division test", divide), testing::KilledBySignal(SIGFPE),
              "sinew: oneDNN [0-9]+\\.[0-9]+\\.[0-9]+ stopped on an integer division by zero while creating conv2d "
              "backward data in the division test");
  // Inside a nested checked(), the sentence names the inner constructor; the outer one's name comes back after it.
  EXPECT_EXIT(checked("the outer constructor",
                      [&] {
                        checked("the inner constructor", [] { return 0; });
                        return divide();
                      }),
              testing::KilledBySignal(SIGFPE), "while creating the outer constructor");
  static int handled = 0;
  struct sigaction mine{}, before{}, after{};
  mine.sa_handler = [](int) { ++handled; };
  sigemptyset(&mine.sa_mask);
  ASSERT_EQ(sigaction(SIGFPE, &mine, &before), 0);
  EXPECT_EQ(checked("the outer constructor", [] { return checked("the inner constructor", [] { return 7; }); }), 7);
  sigaction(SIGFPE, &before, &after);
  EXPECT_EQ(after.sa_handler, mine.sa_handler) << "checked() left its own SIGFPE handler in place";
  EXPECT_EQ(handled, 0);
}

// Batch norm on the 4-channel blocks ResNeXt's grouped convolutions write (aBcd4b), where oneDNN has only its
// reference loop, and on plain NCHW (small_conv2d's output), where it has only a slow C++ loop (ncsp_bnorm),
// converts its input into a layout with a jit kernel and normalises there: the output, the input gradient and the
// scale's and shift's gradients equal those of the same op on input in a layout with a jit kernel (not converted),
// with and without a fused ReLU, in training and evaluation mode. An input gradient left in the wrong layout, or a
// forward that read the unconverted input, is off by whole values.
TEST(onednn_batch_norm, layouts_without_a_jit_kernel_normalise_in_one_with_it_and_agree_with_it) {
  using namespace backend::onednn;
  OneDnn::context ctx({.threads = 2});
  constexpr int N = 3, C = 8, H = 4, W = 4;
  const desc plain = plain_desc(N, C, H, W), blocks_of_4({N, C, H, W}, dt::f32, tag::aBcd4b);
  const std::vector<float> x = DenseOnFlatParams::normals(N * C * H * W, 11),
                           dy = DenseOnFlatParams::normals(N * C * H * W, 12);
  int checked_flags = 0;
  for (const auto act : {simd::activation::none, simd::activation::relu}) {
    // The first blocked or NHWC layout with a jit kernel for the op's flags (a fused ReLU has fewer on SSE 4.1).
    using flags = dnnl::normalization_flags;
    const flags f = flags::use_scale | flags::use_shift |
                    (act == simd::activation::relu ? flags::fuse_norm_relu : flags::none);
    std::optional<desc> chosen;
    for (const tag t : {tag::aBcd16b, tag::aBcd8b, tag::acdb}) {
      const desc d({N, C, H, W}, dt::f32, t);
      const std::string impl =
          compat::batch_norm_forward(ctx.engine(), dnnl::prop_kind::forward_training, d, 1e-5f, f).impl_info_str();
      if (!chosen && impl.find("jit") != std::string::npos) chosen = d;
    }
    if (!chosen) {
      std::cout << "[   NOTE   ] oneDNN has no jit batch normalisation on this CPU for these flags: not checked\n";
      continue;
    }
    ++checked_flags;
    const desc* layouts[] = {&*chosen, &blocks_of_4, &plain};
    for (const bool training : {true, false}) {
      SCOPED_TRACE(testing::Message() << (act == simd::activation::relu ? "ReLU" : "no activation")
                                      << (training ? ", training" : ", evaluation"));
      struct side {
        std::vector<float> params, grads, buffers, y, dx;
        batch_norm_op op;
      } sides[3];
      for (int k = 0; k < 3; ++k) {
        SCOPED_TRACE(k == 0 ? "the layout chosen" : k == 1 ? "blocks of 4" : "NCHW");
        side& s = sides[k];
        const desc& src_md = *layouts[k];
        s.params = DenseOnFlatParams::normals(2 * C, 13);
        s.grads.assign(2 * C, -1.0f);
        s.buffers.assign(2 * C, 1.0f);
        for (int ch = 0; ch < C; ++ch) s.buffers[std::size_t(ch)] = 0.1f * float(ch);  // running means
        s.op.setup(ctx, src_md, backend::BatchNormConfig{N, C, H, W, 1e-5f, act},
                   ParamSlots{s.params.data(), s.params.data() + C, s.grads.data(), s.grads.data() + C,
                              s.buffers.data()},
                   true);
        EXPECT_EQ(s.op.converts_input(), k != 0);
        std::vector<float> xin(src_md.get_size() / 4), dyin(s.op.dst_desc().get_size() / 4);  // blocks may pad
        memory xp(plain, ctx.engine(), const_cast<float*>(x.data()));
        memory dyp(plain, ctx.engine(), const_cast<float*>(dy.data()));
        memory xm(src_md, ctx.engine(), xin.data()), dym(s.op.dst_desc(), ctx.engine(), dyin.data());
        dnnl::reorder(xp, xm).execute(ctx.stream(), xp, xm);
        dnnl::reorder(dyp, dym).execute(ctx.stream(), dyp, dym);
        ctx.stream().wait();
        s.op.bind_diff_dst(ctx, s.op.dst_desc());
        s.op.set_mode(ForwardMode{.training = training});
        s.op.forward(ctx, xm);
        s.op.backward(ctx, xm, dym);
        ctx.stream().wait();
        s.y.resize(x.size());
        s.dx.resize(x.size());
        to_plain(ctx, s.op.dst(), s.y.data());
        to_plain(ctx, s.op.diff_src(), s.dx.data());
      }
      for (int k = 1; k < 3; ++k) {
        SCOPED_TRACE(k == 1 ? "blocks of 4 against the layout chosen" : "NCHW against the layout chosen");
        for (std::size_t i = 0; i < x.size(); ++i) {
          ASSERT_NEAR(sides[k].y[i], sides[0].y[i], 1e-5f) << "y " << i;
          ASSERT_NEAR(sides[k].dx[i], sides[0].dx[i], 1e-4f) << "dx " << i;
        }
        for (int i = 0; i < 2 * C; ++i)
          ASSERT_NEAR(sides[k].grads[i], sides[0].grads[i], 1e-4f) << "scale/shift " << i;
      }
    }
  }
  if (checked_flags == 0) GTEST_SKIP() << "oneDNN has no jit batch normalisation on this CPU";
}

// Where the inner product's matrix is the kernel itself (a 1x1 kernel on a 1x1 image: ResNet-50's last stage),
// small_conv2d_op's primitives read the layer's weights and write its gradients where they lie, nothing expanded
// or folded: y = W x + b, dW = dy^T x, db and dx = dy W on PyTorch's [Out, In] layout, and a forward after an update
// in place reads the new weights. A kernel with taps beside the image (3x3 on 1x1) still expands its centre tap.
TEST(onednn_conv2d, small_image_op_reads_a_kernel_that_is_its_matrix_in_place) {
  using namespace backend::onednn;
  OneDnn::context ctx{BackendOptions{}};
  constexpr int kBatch = 6, kIn = 8, kOut = 5;
  const backend::Conv2dConfig c{kBatch, kIn, 1, 1, kOut, 1, 1, 1, 1, 0, true, simd::activation::none};
  std::vector<float> x = DenseOnFlatParams::normals(kBatch * kIn, 1), w = DenseOnFlatParams::normals(kOut * kIn, 2),
                     b = DenseOnFlatParams::normals(kOut, 3), dy = DenseOnFlatParams::normals(kBatch * kOut, 4),
                     dw(w.size()), db(b.size()), y(dy.size()), dx(x.size());
  const desc src({kBatch, kIn, 1, 1}, dt::f32, tag::nchw);
  small_conv2d_op op;
  op.setup(ctx, src, c, ParamSlots{w.data(), b.data(), dw.data(), db.data()}, true);
  EXPECT_TRUE(op.reads_kernel_in_place());
  const memory xm(src, ctx.engine(), x.data()), dym(op.dst_desc(), ctx.engine(), dy.data());
  op.bind_diff_dst(ctx, op.dst_desc());
  for (int update = 0; update < 2; ++update) {
    SCOPED_TRACE(update ? "after an update in place" : "first step");
    op.forward(ctx, xm);
    op.backward(ctx, xm, dym);
    to_plain(ctx, op.dst(), y.data());
    to_plain(ctx, op.diff_src(), dx.data());
    for (int n = 0; n < kBatch; ++n)
      for (int o = 0; o < kOut; ++o) {
        double want = b[o];
        for (int i = 0; i < kIn; ++i) want += double(w[o * kIn + i]) * x[n * kIn + i];
        ASSERT_NEAR(y[n * kOut + o], want, 1e-4 * (1 + std::fabs(want))) << "y " << n << "," << o;
      }
    for (int o = 0; o < kOut; ++o) {
      double want_db = 0;
      for (int n = 0; n < kBatch; ++n) want_db += dy[n * kOut + o];
      ASSERT_NEAR(db[o], want_db, 1e-4 * (1 + std::fabs(want_db))) << "db " << o;
      for (int i = 0; i < kIn; ++i) {
        double want = 0;
        for (int n = 0; n < kBatch; ++n) want += double(dy[n * kOut + o]) * x[n * kIn + i];
        ASSERT_NEAR(dw[o * kIn + i], want, 1e-4 * (1 + std::fabs(want))) << "dW " << o << "," << i;
      }
    }
    for (int n = 0; n < kBatch; ++n)
      for (int i = 0; i < kIn; ++i) {
        double want = 0;
        for (int o = 0; o < kOut; ++o) want += double(dy[n * kOut + o]) * w[o * kIn + i];
        ASSERT_NEAR(dx[n * kIn + i], want, 1e-4 * (1 + std::fabs(want))) << "dx " << n << "," << i;
      }
    for (float& v : w) v = -0.5f * v + 0.25f;  // an optimizer step, in place
  }
  backend::Conv2dConfig centre = c;
  centre.kernel = 3, centre.padding = 1;
  std::vector<float> w3(std::size_t(kOut) * kIn * 9), dw3(w3.size());
  small_conv2d_op expanded;
  expanded.setup(ctx, src, centre, ParamSlots{w3.data(), b.data(), dw3.data(), db.data()}, false);
  EXPECT_FALSE(expanded.reads_kernel_in_place());
}

// A 3x3 kernel onto a small output (conv_is_lowered: to 4x4, or 8x8 from 128 channels) is lowered (an inner
// product over the input's patches, lowered_conv2d.hpp) where oneDNN runs its AVX2 kernels and stays oneDNN's
// convolution where it runs AVX-512 ones: the choice is made at set-up from oneDNN's effective ISA, so
// `ctest --preset numerics-avx2` (ONEDNN_MAX_CPU_ISA=AVX2) takes the lowered form on an AVX-512 machine too. The
// form chosen, and the lowered op asked for directly on any machine, compute the convolution, and the lowered op's
// gradients match conv2d_op's.
template <class Op>
void expect_conv_op_matches_onednn(const backend::Conv2dConfig& c, bool need_diff_src);
TEST(onednn_conv2d, small_output_3x3_is_lowered_only_where_onednn_runs_avx2_kernels) {
  using namespace backend::onednn;
  OneDnn::context ctx{BackendOptions{}};
  constexpr int kBatch = 3, kIn = 6, kOut = 7, kH = 5, kW = 4;
  const backend::Conv2dConfig c{kBatch, kIn, kH, kW, kOut, kH, kW, 3, 1, 1, true, simd::activation::none};
  std::vector<float> x = DenseOnFlatParams::normals(kBatch * kIn * kH * kW, 1),
                     w = DenseOnFlatParams::normals(kOut * kIn * 9, 2), b = DenseOnFlatParams::normals(kOut, 3),
                     dw(w.size()), db(b.size()), y(std::size_t(kBatch) * kOut * kH * kW);
  const desc src({kBatch, kIn, kH, kW}, dt::f32, tag::nchw);
  const memory xm(src, ctx.engine(), x.data());
  const auto want = ref::conv2d(x, w.data(), b.data(), kBatch, kIn, kH, kW, kOut, 3, 1, 1);
  auto check = [&](auto& op) {
    op.setup(ctx, src, c, ParamSlots{w.data(), b.data(), dw.data(), db.data()}, false);
    op.forward(ctx, xm);
    to_plain(ctx, op.dst(), y.data());
    expect_close(y, want);
  };
  lowered_on_avx2_conv2d_op chosen;
  check(chosen);
  EXPECT_EQ(chosen.took_form(), !onednn_runs_avx512()) << (onednn_runs_avx512() ? "AVX-512" : "AVX2") << " kernels";
  if (const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA"); cap && std::string(cap) == "AVX2") {
    EXPECT_TRUE(chosen.took_form()) << "ONEDNN_MAX_CPU_ISA=AVX2";
  }
  lowered_conv2d_op lowered;
  check(lowered);
  // Its gradients too, the taps of a kernel row that meet the image gathered and added back as one copy.
  expect_conv_op_matches_onednn<lowered_conv2d_op>(c, true);
  static_assert(conv_lowering_follows_isa(3) && conv_lowering_follows_isa(2) && !conv_lowering_follows_isa(1));
  // Which shapes take that choice: every output to 4x4, an 8x8 one from 128 output channels (ResNet-18's and
  // ResNet-50's 64-channel layer1 stays direct), no larger one, no 5x5 kernel.
  static_assert(conv_is_lowered(4, 4, 3, 1, 64) && conv_is_lowered(8, 8, 3, 1, 128) &&
                conv_is_lowered(3, 3, 3, 1, 384));
  static_assert(!conv_is_lowered(8, 8, 3, 1, 64) && !conv_is_lowered(16, 16, 3, 1, 256) &&
                !conv_is_lowered(4, 4, 5, 1, 256));
  // A 1x1 kernel: strided onto at most 2x2, at stride 1 onto at most 4x4 (ResNet-50's 8x8 stage stays direct).
  static_assert(conv_is_lowered(2, 2, 1, 2, 1024) && conv_is_lowered(4, 4, 1, 1, 128) && conv_is_lowered(2, 2, 1, 1, 1024));
  static_assert(!conv_is_lowered(4, 4, 1, 2, 512) && !conv_is_lowered(8, 8, 1, 1, 256));
}

// AlexNet's first layer (3 channels, 11x11 at stride 4 with padding 2, 64x64 -> 15x15) at batch 2 onto 16 channels.
constexpr backend::Conv2dConfig kAlexNetFirstLayer{2, 3, 64, 64, 16, 15, 15, 11, 4, 2, true, simd::activation::none};

// `op` set up on `c` (without activation) from an NCHW input and run forward: its output against the reference.
template <class Op>
void expect_forward_matches_reference(OneDnn::context& ctx, Op& op, const backend::Conv2dConfig& c) {
  using namespace backend::onednn;
  std::vector<float> x = DenseOnFlatParams::normals(c.batch * c.in_c * c.in_h * c.in_w, 1),
                     w = DenseOnFlatParams::normals(c.out_c * c.in_c * c.kernel * c.kernel, 2),
                     b = DenseOnFlatParams::normals(c.out_c, 3), dw(w.size()), db(b.size()),
                     y(std::size_t(c.batch) * c.out_c * c.out_h * c.out_w);
  const desc src({c.batch, c.in_c, c.in_h, c.in_w}, dt::f32, tag::nchw);
  op.setup(ctx, src, c, ParamSlots{w.data(), b.data(), dw.data(), db.data()}, true);
  op.forward(ctx, memory(src, ctx.engine(), x.data()));
  to_plain(ctx, op.dst(), y.data());
  expect_close(y, ref::conv2d(x, w.data(), b.data(), c.batch, c.in_c, c.in_h, c.in_w, c.out_c, c.kernel, c.stride,
                              c.padding));
}

// AlexNet's first layer is one oneDNN runs on its gemm-based convolution where it runs AVX2 kernels; where NHWC
// then gets an AVX2 brgemm convolution (oneDNN 3.7) conv2d_op runs it NHWC on that (nhwc_where_gemm), elsewhere in
// oneDNN's layout. Output against the reference either way; the gradients are tests/layers/test_gradients.cpp's
// (conv2d_k11_s4_three_channels_first_layer).
TEST(onednn_conv2d, a_layer_on_onednns_gemm_convolution_runs_nhwc_where_avx2_brgemm_kernels_exist) {
  using namespace backend::onednn;
  OneDnn::context ctx{BackendOptions{}};
  const backend::Conv2dConfig& c = kAlexNetFirstLayer;
  conv2d_op op;
  expect_forward_matches_reference(ctx, op, c);
  const bool nhwc = op.dst_desc() == desc({c.batch, c.out_c, c.out_h, c.out_w}, dt::f32, tag::nhwc);
  if (onednn_runs_avx512() || DNNL_VERSION_MAJOR < 3) {
    EXPECT_FALSE(nhwc) << "AVX-512 kernels, or oneDNN 2 (no AVX2 brgemm convolutions): oneDNN's layout";
  }
#if DNNL_VERSION_MAJOR > 3 || (DNNL_VERSION_MAJOR == 3 && DNNL_VERSION_MINOR >= 7)
  if (const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA"); cap && std::string(cap) == "AVX2") {
    EXPECT_TRUE(nhwc) << "oneDNN 3.7 runs the layer on brg_conv_fwd:avx2 in NHWC";
  }
#endif
  EXPECT_EQ(nhwc_where_gemm("x64:gemm:jit", false), !onednn_runs_avx512());
  EXPECT_FALSE(nhwc_where_gemm("jit:avx2", false));
  EXPECT_FALSE(nhwc_where_gemm("x64:gemm:jit", true));
}

// The plain form's own kernels refuse a grouped or a dilated convolution given to them directly, with a sentence
// (conv2d_op_for gives those to conv2d_op, oneDNN's grouped primitive).
TEST(onednn_conv2d, thin_and_small_image_ops_refuse_grouped_or_dilated_configurations) {
  using namespace backend::onednn;
  OneDnn::context ctx{BackendOptions{}};
  backend::Conv2dConfig grouped{4, 4, 2, 2, 4, 2, 2, 3, 1, 1, true, simd::activation::none}, dilated = grouped;
  grouped.groups = 2;
  dilated.dilation = 2;
  std::vector<float> w(4 * 4 * 9), b(4), dw(w.size()), db(b.size());
  const ParamSlots p{w.data(), b.data(), dw.data(), db.data()};
  const desc src({4, 4, 2, 2}, dt::f32, tag::nchw);
  for (const backend::Conv2dConfig& c : {grouped, dilated}) {
    small_conv2d_op small;
    thin_conv2d_op thin;
    EXPECT_THROW(small.setup(ctx, src, c, p, false), backend_error);
    try {
      thin.setup(ctx, src, c, p, false);
      ADD_FAILURE() << "thin_conv2d_op accepted " << c.groups << " groups, dilation " << c.dilation;
    } catch (const backend_error& e) {
      EXPECT_NE(std::string(e.what()).find("it computes ungrouped, undilated convolutions only"), std::string::npos)
          << e.what();
    }
  }
}

// Stride-1 convolutions of at most 16 channels run on sinew's kernels (onednn/thin_conv2d.hpp). The op against
// oneDNN's conv2d_op on the same weights, input and output gradient: output (with the activation fused),
// weights', bias' and input gradients, at odd batches, on the widest instruction set and on AVX2's kernels.
template <class Op>
struct conv_run {
  Op op;
  std::vector<float> w, b, dw, db, y, dx;
  void run(OneDnn::context& ctx, const backend::Conv2dConfig& c, bool need_diff_src, const std::vector<float>& weights,
           const std::vector<float>& bias, std::vector<float>& x, std::vector<float>& dy) {
    using namespace backend::onednn;
    w = weights, b = bias, dw.assign(w.size(), -1.0f), db.assign(b.size(), -1.0f);
    const desc src_md = plain_desc(c.batch, c.in_c, c.in_h, c.in_w), dst_md = plain_desc(c.batch, c.out_c, c.out_h, c.out_w);
    op.setup(ctx, src_md, c, ParamSlots{w.data(), c.bias ? b.data() : nullptr, dw.data(), c.bias ? db.data() : nullptr},
             need_diff_src);
    op.bind_diff_dst(ctx, dst_md);
    const memory src(src_md, ctx.engine(), x.data()), diff_dst(dst_md, ctx.engine(), dy.data());
    for (int pass = 0; pass < 2; ++pass) {  // twice: scratch left by a step must not leak into the next
      op.forward(ctx, src);
      op.backward(ctx, src, diff_dst);
    }
    ctx.stream().wait();
    y.resize(dy.size());
    to_plain(ctx, op.dst(), y.data());
    if (need_diff_src) dx.resize(x.size()), to_plain(ctx, op.diff_src(), dx.data());
  }
};

// Op against oneDNN's conv2d_op (see conv_run), within 1e-5 of the largest value of each result.
template <class Op>
void expect_conv_op_matches_onednn(const backend::Conv2dConfig& c, bool need_diff_src) {
  using namespace backend::onednn;
  OneDnn::context ctx{BackendOptions{}};
  Rng rng(17);
  std::vector<float> w(std::size_t(c.out_c * c.in_c * c.kernel * c.kernel)), b(std::size_t(c.out_c));
  std::vector<float> x(std::size_t(c.batch * c.in_c * c.in_h * c.in_w)), dy(std::size_t(c.batch * c.out_c * c.out_h * c.out_w));
  for (float& v : w) v = 0.2f * rng.normal();
  for (float& v : b) v = 0.2f * rng.normal();
  for (float& v : x) v = rng.normal();
  for (float& v : dy) v = rng.normal();
  conv_run<conv2d_op> want;
  conv_run<Op> got;
  want.run(ctx, c, need_diff_src, w, b, x, dy);
  got.run(ctx, c, need_diff_src, w, b, x, dy);
  const auto near = [](const std::vector<float>& g, const std::vector<float>& e, const char* what) {
    ASSERT_EQ(g.size(), e.size()) << what;
    float scale = 0;
    for (float v : e) scale = std::max(scale, std::fabs(v));
    for (std::size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], e[i], 1e-5f * (1 + scale)) << what << " at " << i;
  };
  near(got.y, want.y, "output");
  near(got.dw, want.dw, "weights' gradient");
  if (c.bias) near(got.db, want.db, "bias' gradient");
  if (need_diff_src) near(got.dx, want.dx, "input gradient");
}

template <class Arch>
void expect_thin_conv_matches_onednn(const backend::Conv2dConfig& c, bool need_diff_src) {
  expect_conv_op_matches_onednn<backend::onednn::basic_thin_conv2d_op<Arch>>(c, need_diff_src);
}

// Fewer input channels than kernel columns (conv_gathers_kernel_rows: AlexNet's first layer) take
// lowered_where_gemm_conv2d_op: lowered, the patches gathered from the NCHW image a kernel row at a time, where
// oneDNN would run its gemm-based convolution (oneDNN 2.6 capped to AVX2), else conv2d_op. The form chosen
// against the reference, the rule against conv2d_op's own forward, and the kernel-row form asked for directly on
// any machine against conv2d_op: output, weights', bias' and input gradients (the input gradient added back a
// kernel row at a time), for AlexNet's shape with a fused ReLU and for one channel under a padded 5x5 kernel at
// stride 1.
TEST(onednn_conv2d, a_first_layer_is_lowered_by_kernel_rows_where_onednn_runs_its_gemm_convolution) {
  using namespace backend::onednn;
  OneDnn::context ctx{BackendOptions{}};
  const backend::Conv2dConfig& c = kAlexNetFirstLayer;
  lowered_where_gemm_conv2d_op chosen;
  expect_forward_matches_reference(ctx, chosen, c);
  const std::string impl = conv2d_op::forward_implementation(ctx, c);
  EXPECT_EQ(chosen.took_form(), impl.find("gemm") != std::string::npos && impl.find("brg") == std::string::npos)
      << "conv2d_op would run " << impl;
  if (chosen.took_form()) {
    EXPECT_TRUE(chosen.form()->gathers_kernel_rows());
  }
  if (onednn_runs_avx512()) {
    EXPECT_FALSE(chosen.took_form()) << "oneDNN's AVX-512 kernels take the layer: " << impl;
  }
  if (const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
      DNNL_VERSION_MAJOR < 3 && cap && std::string(cap) == "AVX2") {
    EXPECT_TRUE(chosen.took_form()) << "oneDNN 2 capped to AVX2 runs the layer as " << impl;
  }
  static_assert(conv_gathers_kernel_rows(3, 11) && conv_gathers_kernel_rows(1, 3) && !conv_gathers_kernel_rows(3, 3) &&
                !conv_gathers_kernel_rows(16, 3));
  backend::Conv2dConfig fused = c;
  fused.act = simd::activation::relu;
  expect_conv_op_matches_onednn<lowered_conv2d_op>(fused, true);
  expect_conv_op_matches_onednn<lowered_conv2d_op>({3, 1, 9, 7, 5, 9, 7, 5, 1, 2, false, simd::activation::none},
                                                   true);
  lowered_conv2d_op asked_for;
  expect_forward_matches_reference(ctx, asked_for, c);
  EXPECT_TRUE(asked_for.gathers_kernel_rows());
}

using Act = simd::activation;
// LeNet-5's layers (3->6 5x5 on 32x32 without the input gradient, 6->16 on 14x14 with it) at batch 5, then a
// padded layer of odd sizes without activation or bias.
const backend::Conv2dConfig kLeNetConv1{5, 3, 32, 32, 6, 28, 28, 5, 1, 0, true, Act::tanh};
const backend::Conv2dConfig kLeNetConv2{5, 6, 14, 14, 16, 10, 10, 5, 1, 0, true, Act::tanh};
const backend::Conv2dConfig kPaddedOdd{3, 5, 9, 7, 7, 9, 7, 3, 1, 1, false, Act::none};
// Output channels that fill whole vectors (16: one AVX-512 vector, two AVX2 ones; 8: one AVX2 vector) take the
// channel-vectorised forward and weights' gradient: padded 3x3 of odd sizes, 5x5 rows of 13 pixels (tiles of 8, 4
// and 1)
const backend::Conv2dConfig kChannels16Padded{3, 5, 9, 7, 16, 9, 7, 3, 1, 1, true, Act::none};
const backend::Conv2dConfig kChannels8Wide{2, 3, 9, 17, 8, 5, 13, 5, 1, 0, false, Act::tanh};
// and 2 output rows, fewer than some tiles have.
const backend::Conv2dConfig kChannels16Short{2, 4, 4, 11, 16, 2, 9, 3, 1, 0, true, Act::none};

TEST(onednn_thin_conv2d, lenet_layers_and_a_padded_layer_match_onednn) {
  using A = simd::thin_conv::default_arch;
  expect_thin_conv_matches_onednn<A>(kLeNetConv1, false);
  expect_thin_conv_matches_onednn<A>(kLeNetConv2, true);
  expect_thin_conv_matches_onednn<A>(kPaddedOdd, true);
  expect_thin_conv_matches_onednn<A>(kChannels16Padded, true);
  expect_thin_conv_matches_onednn<A>(kChannels8Wide, true);
  expect_thin_conv_matches_onednn<A>(kChannels16Short, true);
}

#if XSIMD_WITH_AVX2
// A CPU without AVX-512 compiles (-march=native) the same op on 8-wide vectors and 16 registers.
TEST(onednn_thin_conv2d, avx2_kernels_match_onednn) {
  expect_thin_conv_matches_onednn<xsimd::avx2>(kLeNetConv1, false);
  expect_thin_conv_matches_onednn<xsimd::avx2>(kLeNetConv2, true);
  expect_thin_conv_matches_onednn<xsimd::avx2>(kPaddedOdd, true);
  expect_thin_conv_matches_onednn<xsimd::avx2>(kChannels16Padded, true);
  expect_thin_conv_matches_onednn<xsimd::avx2>(kChannels8Wide, true);
  expect_thin_conv_matches_onednn<xsimd::avx2>(kChannels16Short, true);
}
#endif

// A 3x3 convolution at stride 1 with padding 1 onto a small image, without bias or fused activation, runs as
// Winograd's F(2x2, 3x3) (onednn/winograd_conv2d.hpp). Against oneDNN's direct convolution: output, weights' and
// input gradients on ResNet-18's 8x8 layer (narrower), on odd sides (last tiles half outside the image) with more
// than the transforms' 64 channels a chunk on each side, and without the input gradient.
const backend::Conv2dConfig kWinogradResNet{3, 32, 8, 8, 32, 8, 8, 3, 1, 1, false, Act::none};
const backend::Conv2dConfig kWinogradOddWide{2, 70, 5, 7, 66, 5, 7, 3, 1, 1, false, Act::none};

TEST(onednn_winograd_conv2d, matches_onednns_direct_convolution) {
  using backend::onednn::winograd_conv2d_op;
  expect_conv_op_matches_onednn<winograd_conv2d_op>(kWinogradResNet, true);
  expect_conv_op_matches_onednn<winograd_conv2d_op>(kWinogradOddWide, true);
  expect_conv_op_matches_onednn<winograd_conv2d_op>(kWinogradOddWide, false);
}

// conv2d_op_for's choice for such layers runs the Winograd form where oneDNN runs AVX2 kernels and oneDNN's direct
// convolution where it runs AVX-512 ones, at set-up: `ctest --preset numerics-avx2` takes the Winograd form on an
// AVX-512 machine too.
TEST(onednn_winograd_conv2d, is_chosen_where_onednn_runs_avx2_kernels) {
  using namespace backend::onednn;
  expect_conv_op_matches_onednn<winograd_on_avx2_conv2d_op>(kWinogradResNet, true);
  OneDnn::context ctx{BackendOptions{}};
  const backend::Conv2dConfig& c = kWinogradResNet;
  std::vector<float> w(std::size_t(c.out_c * c.in_c * 9)), dw(w.size());
  winograd_on_avx2_conv2d_op chosen;
  chosen.setup(ctx, plain_desc(c.batch, c.in_c, c.in_h, c.in_w), c, ParamSlots{w.data(), nullptr, dw.data(), nullptr},
               true);
  EXPECT_EQ(chosen.took_form(), !onednn_runs_avx512()) << (onednn_runs_avx512() ? "AVX-512" : "AVX2") << " kernels";
  if (const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA"); cap && std::string(cap) == "AVX2") {
    EXPECT_TRUE(chosen.took_form()) << "ONEDNN_MAX_CPU_ISA=AVX2";
  }
}

// What it does not compute it refuses with a sentence; conv_is_winograd sends such layers elsewhere.
TEST(onednn_winograd_conv2d, refuses_other_kernels_strides_bias_and_activations_with_a_sentence) {
  using namespace backend::onednn;
  OneDnn::context ctx{BackendOptions{}};
  const backend::Conv2dConfig plain = kWinogradResNet;
  backend::Conv2dConfig strided = plain, five = plain, biased = plain, fused = plain, grouped = plain;
  strided.stride = 2, strided.out_h = strided.out_w = 4;
  five.kernel = 5, five.padding = 2;
  biased.bias = true;
  fused.act = Act::relu;
  grouped.groups = 2;
  std::vector<float> w(std::size_t(32 * 32 * 25)), b(32), dw(w.size()), db(b.size());
  const ParamSlots p{w.data(), b.data(), dw.data(), db.data()};
  const desc src = plain_desc(3, 32, 8, 8);
  const std::pair<const backend::Conv2dConfig*, const char*> cases[] = {
      {&strided, "it computes 3x3 kernels at stride 1 with padding 1 only"},
      {&five, "it computes 3x3 kernels at stride 1 with padding 1 only"},
      {&biased, "it computes neither"},
      {&fused, "it computes neither"},
      {&grouped, "it computes ungrouped, undilated convolutions only"}};
  for (const auto& [c, sentence] : cases) {
    winograd_conv2d_op op;
    try {
      op.setup(ctx, src, *c, p, true);
      ADD_FAILURE() << "winograd_conv2d_op accepted a configuration it does not compute: " << sentence;
    } catch (const backend_error& e) {
      EXPECT_NE(std::string(e.what()).find(sentence), std::string::npos) << e.what();
    }
  }
  // The rule: ResNet's 3x3 layers on 8x8 and 4x4 images, not 512 channels, 2x2 or 16x16 images, bias or activation.
  static_assert(conv_is_winograd(3, 1, 1, false, false, 8, 8, 64, 64) &&
                conv_is_winograd(3, 1, 1, false, false, 4, 4, 128, 128) &&
                conv_is_winograd(3, 1, 1, false, false, 8, 8, 256, 256));
  static_assert(!conv_is_winograd(3, 1, 1, false, false, 4, 4, 512, 512) &&
                !conv_is_winograd(3, 1, 1, false, false, 2, 2, 256, 256) &&
                !conv_is_winograd(3, 1, 1, false, false, 16, 16, 128, 128) &&
                !conv_is_winograd(3, 1, 1, true, false, 8, 8, 64, 64) &&
                !conv_is_winograd(3, 1, 1, false, true, 8, 8, 64, 64) &&
                !conv_is_winograd(3, 2, 1, false, false, 8, 8, 64, 64));
}

// LeNet-5's two convolutions take the thin op, chosen from their shapes (conv2d.hpp's conv2d_op_for).
template <class... N>
constexpr int thin_convolutions(type_list<N...>) {
  return (0 + ... + int(std::is_same_v<OneDnn::op<N>, backend::onednn::thin_conv2d_op>));
}
TEST(onednn_thin_conv2d, lenet5_convolutions_take_the_thin_op) {
  static_assert(thin_convolutions(nets::LeNet5<Input<3, 32, 32>>::nodes<true>{}) == 2);
  static_assert(thin_convolutions(nets::LeNet5<Input<1, 32, 32>>::nodes<true>{}) == 2);
  // and train: one step's loss is finite and the first layer's weights get a gradient
  OneDnn::context ctx{BackendOptions{}};
  Model<nets::LeNet5<Input<3, 32, 32>>, OneDnn> model(ctx, ModelOptions{.seed = 3});
  std::vector<float> x(3 * 3 * 32 * 32);
  Rng rng(4);
  for (float& v : x) v = rng.normal();
  model.forward(x, 3);
  const std::vector<std::int32_t> labels{1, 4, 7};
  EXPECT_TRUE(std::isfinite(model.loss(labels).loss));
  model.backward();
  float norm = 0;
  for (int i = 0; i < 6 * 3 * 25; ++i) norm += std::fabs(model.gradients()[std::size_t(i)]);
  EXPECT_GT(norm, 0.0f);
}

TEST(onednn_forward, wrong_input_size_is_a_shape_error) {
  Fixture<Sequential<Input<2, 6, 6>, Flatten, Dense<3>>> f;
  std::vector<float> x(71);
  EXPECT_THROW(f.model.forward(x, 1), shape_error);
}

}  // namespace
