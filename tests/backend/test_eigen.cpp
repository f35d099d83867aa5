// The Eigen backend beyond the layer cases (those run on every backend and against OneDnn in
// tests/layers/test_gradients.cpp): larger batches and thread counts against OneDnn, the context, the layout
// descriptors and the plan per batch size.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "sinew/backend/eigen.hpp"  // first: EIGEN_USE_THREADS before any Tensor include
#include "../support/onednn_vs_eigen.hpp"
#include "sinew/backend/onednn.hpp"
#include "sinew/model.hpp"
#include "sinew/nets/lenet5.hpp"

namespace {
using namespace sinew;
using OneDnn = backend::OneDnn;
using EigenB = backend::Eigen;

template <class... L>
using Net = Sequential<L...>;

template <class N>
void expect_equivalent(int batch = 3, std::uint64_t seed = 5, int eigen_threads = 0) {
  test::expect_equivalent<N>({.batch = batch, .seed = seed, .eigen_threads = eigen_threads});
}

TEST(onednn_vs_eigen, lenet5_batch64) { expect_equivalent<nets::LeNet5<Input<3, 32, 32>>>(64, 3); }
// More pool threads than cores: every parallelFor splits into many ranges, so range arithmetic is exercised.
TEST(onednn_vs_eigen, lenet5_batch5_eigen_7_threads) { expect_equivalent<nets::LeNet5<Input<3, 32, 32>>>(5, 4, 7); }
TEST(onednn_vs_eigen, conv2d_k3_s2_p1_eigen_1_thread) {
  expect_equivalent<Net<Input<3, 8, 8>, Conv2d<5, 3, 2, 1>, ReLU, MaxPool<3, 2, 1>>>(4, 5, 1);
}

// Forward paths of their own: batch 1 to 3 run Dense as matrix-vector products (threads split the output
// rows; 37 and 5 outputs are not multiples of the 16-row ranges), a 1x1 stride-1 convolution contracts its
// input in place (no patches), and batch norm sums rows in pieces per thread.
TEST(onednn_vs_eigen, dense_gemv_batch1_eigen_3_threads) {
  expect_equivalent<Net<Input<3, 9, 9>, Conv2d<8, 3, 1, 1>, ReLU, Flatten, Dense<37>, ReLU, Dense<5>>>(1, 6, 3);
}
TEST(onednn_vs_eigen, dense_gemv_batch2_eigen_1_thread) {
  expect_equivalent<Net<Input<3, 9, 9>, Conv2d<8, 3, 1, 1>, ReLU, Flatten, Dense<37>, ReLU, Dense<5>>>(2, 7, 1);
}
TEST(onednn_vs_eigen, conv2d_1x1_s1_pointwise_between_3x3) {
  expect_equivalent<Net<Input<5, 6, 6>, Conv2d<8, 1>, ReLU, Conv2d<6, 3, 1, 1>, Conv2d<4, 1>, Tanh>>(3, 8, 2);
}
// 5 x 7 x 7 = 245 output rows: on 2 threads, forward and backward data in blocks of 62 rows and a last of
// 59, the weights gradient's two shares of 128 and 117 rows summed; batch norm's 245 rows in 8 pieces of 31
// and a last of 28.
TEST(onednn_vs_eigen, conv2d_and_batch_norm_odd_rows_across_blocks) {
  expect_equivalent<Net<Input<4, 7, 7>, Conv2d<6, 3, 1, 1>, BatchNorm2d, ReLU, Conv2d<5, 1>, BatchNorm2d>>(5, 9, 2);
}

// From batch 4 Dense's three products run on oneDNN's sgemm, each thread a share of columns or rows (37 and 5
// outputs, 72 inputs: shares of 16-column granules and a short last one).
TEST(onednn_vs_eigen, dense_sgemm_batch4_eigen_3_threads) {
  expect_equivalent<Net<Input<2, 6, 6>, Conv2d<8, 3, 1, 1>, ReLU, Flatten, Dense<37>, ReLU, Dense<5>>>(4, 10, 3);
}

/// op(A) op(B) by the definition, for the gemm tests.
std::vector<float> naive_product(int m, int n, int k, const float* a, long lda, bool ta, const float* b, long ldb,
                                 bool tb) {
  std::vector<float> c(std::size_t(m) * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int l = 0; l < k; ++l) sum += double(ta ? a[l * lda + i] : a[i * lda + l]) * (tb ? b[j * ldb + l] : b[l * ldb + j]);
      c[std::size_t(i) * n + j] = float(sum);
    }
  return c;
}

// The backend's matrix kernel: every transpose, leading dimensions past the rows' length, alpha and beta, and
// the caller's OpenMP thread count as it was after the call.
TEST(eigen_gemm, row_major_products_with_transposes_strides_alpha_and_beta) {
  using backend::eigen::gemm;
  using backend::eigen::transposed;
  const int m = 7, n = 5, k = 9;
  const long lda = 12, ldb = 11, ldc = 8;
  Rng rng(3);
  std::vector<float> a(std::size_t(k) * lda), b(std::size_t(k) * ldb);
  for (float& v : a) v = rng.normal();
  for (float& v : b) v = rng.normal();
  const int threads_before = omp_get_max_threads();
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const auto want = naive_product(m, n, k, a.data(), lda, ta, b.data(), ldb, tb);
      std::vector<float> c(std::size_t(m) * ldc, 1.0f);
      backend::eigen::gemm_operand oa{a.data(), lda}, ob{b.data(), ldb};
      gemm(m, n, k, ta ? transposed(oa) : oa, tb ? transposed(ob) : ob, c.data(), ldc, 2.0f, 0.5f);
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j)
          EXPECT_NEAR(c[std::size_t(i) * ldc + j], 2.0f * want[std::size_t(i) * n + j] + 0.5f, 1e-4f)
              << "transposes " << ta << tb << " at " << i << ", " << j;
        for (int j = n; j < ldc; ++j) EXPECT_EQ(c[std::size_t(i) * ldc + j], 1.0f) << "wrote past column n";
      }
    }
  EXPECT_EQ(omp_get_max_threads(), threads_before);
}

TEST(eigen_gemm, a_too_short_leading_dimension_is_named) {
  std::vector<float> a(16), b(16), c(16);
  try {
    backend::eigen::gemm(4, 4, 4, {a.data(), 2}, {b.data(), 4}, c.data(), 4);
    FAIL() << "no error";
  } catch (const backend_error& e) {
    EXPECT_NE(std::string(e.what()).find("leading dimensions 2, 4, 4"), std::string::npos) << e.what();
  }
}

// The pool's threads run OpenMP code alone: a pool thread's OpenMP ICV is 1, so its sgemm opens no team.
TEST(eigen_context, pool_threads_have_one_openmp_thread) {
  EigenB::context ctx{BackendOptions{.threads = 2}};
  int seen = 0;
  ::Eigen::Barrier done(1);
  ctx.dev().enqueueNoNotification([&] {
    seen = omp_get_max_threads();
    done.Notify();
  });
  done.Wait();
  EXPECT_EQ(seen, 1);
}

TEST(eigen_context, threads_default_to_the_cpus_of_this_process_and_follow_the_option) {
  EigenB::context all{BackendOptions{}};
  EXPECT_EQ(all.threads(), int(allowed_cpus().size()));
  EigenB::context three{BackendOptions{.threads = 3}};
  EXPECT_EQ(three.threads(), 3);
}

// BackendOptions::cpus binds the pool's threads (Trainer fills it from its core plan).
TEST(eigen_context, pool_threads_run_on_the_cpus_they_are_given) {
  const int last = allowed_cpus().back();
  EigenB::context ctx{BackendOptions{.threads = 1, .cpus = {last}}};
  std::vector<int> seen;
  ::Eigen::Barrier done(1);
  ctx.dev().enqueueNoNotification([&] {
    seen = allowed_cpus();
    done.Notify();
  });
  done.Wait();
  EXPECT_EQ(seen, (std::vector<int>{last}));
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
  // The matrix kernel blocks by size, so the summation order (not the result) may differ by batch.
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(one[i], full[i], 1e-6f * std::max(1.0f, std::fabs(full[i])));
}

}  // namespace

// Conv2d's forward groups the output pixels by the kernel taps inside the image (eigen/conv2d.hpp): each
// grouping against the convolution by its definition, forward (bias and ReLU applied per block) and backward
// (which packs P again block by block), from plain NCHW input (the op keeps its NHWC copy for the backward).
struct conv_case {
  backend::Conv2dConfig c;
  int threads;
  backend::eigen::conv2d_op::grouping expected;
};

void expect_conv_by_definition(const conv_case& t) {
  const backend::Conv2dConfig& c = t.c;
  EigenB::context ctx{BackendOptions{.threads = t.threads}};
  const int C = c.in_c, H = c.in_h, W = c.in_w, O = c.out_c, OH = c.out_h, OW = c.out_w, K = c.kernel;
  const std::size_t in = std::size_t(c.batch) * C * H * W, out = std::size_t(c.batch) * O * OH * OW;
  const std::size_t weights = std::size_t(O) * C * K * K, outputs = std::size_t(O);
  Rng rng(11);
  std::vector<float> x(in), w(weights), b(outputs), dy(out), dw(weights), db(outputs);
  for (float& v : x) v = rng.normal();
  for (float& v : w) v = 0.3f * rng.normal();
  for (float& v : b) v = 0.1f * rng.normal();
  for (float& v : dy) v = rng.normal();
  backend::eigen::conv2d_op op;
  const auto plain = EigenB::plain_desc(c.batch, C, H, W);
  op.setup(ctx, plain, c, {w.data(), b.data(), dw.data(), db.data(), nullptr}, true);
  EXPECT_EQ(op.pixel_grouping(), t.expected);
  const auto out_plain = EigenB::plain_desc(c.batch, O, OH, OW);
  op.bind_diff_dst(ctx, out_plain);
  backend::eigen::tensor src{x.data(), plain}, diff{dy.data(), out_plain};
  op.forward(ctx, src);
  std::vector<float> y(out), dx(in);
  backend::eigen::to_plain(ctx, op.dst(), y.data());
  op.backward(ctx, src, diff);
  backend::eigen::to_plain(ctx, op.diff_src(), dx.data());

  // By the definition, in double.
  std::vector<double> ry(out), rdw(w.size()), rdb(b.size()), rdx(in);
  const auto xi = [&](int n, int ch, int ih, int iw) { return ((std::size_t(n) * C + ch) * H + ih) * W + iw; };
  const auto wi = [&](int o, int ch, int kh, int kw) { return ((std::size_t(o) * C + ch) * K + kh) * K + kw; };
  for (int n = 0; n < c.batch; ++n)
    for (int o = 0; o < O; ++o)
      for (int oh = 0; oh < OH; ++oh)
        for (int ow = 0; ow < OW; ++ow) {
          const std::size_t yi = ((std::size_t(n) * O + o) * OH + oh) * OW + ow;
          double z = b[o];
          const auto each_tap = [&](auto&& f) {
            for (int ch = 0; ch < C; ++ch)
              for (int kh = 0; kh < K; ++kh)
                for (int kw = 0; kw < K; ++kw) {
                  const int ih = oh * c.stride - c.padding + kh, iw = ow * c.stride - c.padding + kw;
                  if (ih >= 0 && ih < H && iw >= 0 && iw < W) f(xi(n, ch, ih, iw), wi(o, ch, kh, kw));
                }
          };
          each_tap([&](std::size_t i, std::size_t j) { z += double(x[i]) * w[j]; });
          ry[yi] = std::max(z, 0.0);
          const double dz = z > 0 ? double(dy[yi]) : 0.0;
          rdb[o] += dz;
          each_tap([&](std::size_t i, std::size_t j) {
            rdw[j] += dz * x[i];
            rdx[i] += dz * w[j];
          });
        }
  const auto expect_close = [](const std::vector<float>& got, const std::vector<double>& ref, const char* what) {
    double worst = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::fabs(got[i] - ref[i]) / std::max(1.0, std::fabs(ref[i])));
    EXPECT_LT(worst, 2e-5) << what;
  };
  expect_close(y, ry, "output");
  expect_close(dw, rdw, "weights' gradient");
  expect_close(db, rdb, "bias' gradient");
  expect_close(dx, rdx, "input gradient");
}

using grouping = backend::eigen::conv2d_op::grouping;
constexpr auto relu = simd::activation::relu;
// A 5x5 kernel with padding 2 on a 3x4 image: every output pixel is a border pixel, each group of its taps
// packed apart where it pays (3 of 5 kernel columns: one product per kernel row, accumulated) and the others
// with their zeros in the group of all taps.
TEST(eigen_conv2d_groups, taps_5x5_p2_on_3x4_every_pixel_at_the_border) {
  expect_conv_by_definition({{40, 3, 3, 4, 6, 3, 4, 5, 1, 2, true, relu}, 1, grouping::taps});
}
// Stride 2 over odd sizes (7x9 -> 4x5), on 2 threads: blocks of several groups shared out.
TEST(eigen_conv2d_groups, taps_3x3_s2_p1_odd_sizes_2_threads) {
  expect_conv_by_definition({{32, 32, 7, 9, 8, 4, 5, 3, 2, 1, true, relu}, 2, grouping::taps});
}
// 34x34 pixels: the first and last output rows pack two kernel rows, the others all three, each a run of
// whole output rows multiplied in place; the interior's runs of 1088 rows are cut into blocks of 362 and 363
// rows, on 3 threads.
TEST(eigen_conv2d_groups, kernel_rows_3x3_p1_runs_across_blocks_3_threads) {
  expect_conv_by_definition({{2, 4, 34, 34, 8, 34, 34, 3, 1, 1, true, relu}, 3, grouping::kernel_rows});
}
// Batch 1 at 4x4: no border group pays for re-reading its weights, so all pixels make one group.
TEST(eigen_conv2d_groups, none_at_batch_1_the_zeros_multiplied) {
  expect_conv_by_definition({{1, 16, 4, 4, 32, 4, 4, 3, 1, 1, true, relu}, 2, grouping::none});
}
// Batch 1 on a 1x1 image (ResNet-18's layer4 on 32x32 inputs): the one pixel sees 1 tap of 9, and with no group
// of all taps left nothing reads the other 8 taps' weights, so the taps grouping wins although its group is small.
TEST(eigen_conv2d_groups, taps_at_batch_1_on_a_1x1_image_no_group_of_all_taps) {
  expect_conv_by_definition({{1, 64, 1, 1, 32, 1, 1, 3, 1, 1, true, relu}, 1, grouping::taps});
}
// The same from 2x2 with stride 2 (layer4's first convolution): 4 taps of 9.
TEST(eigen_conv2d_groups, taps_at_batch_1_stride_2_from_2x2_to_1x1) {
  expect_conv_by_definition({{1, 32, 2, 2, 64, 1, 1, 3, 2, 1, true, relu}, 2, grouping::taps});
}
// Batch 1 at 2x2: four corner groups of 4 taps would read 16 taps' weights against 9 merged, so all merge.
TEST(eigen_conv2d_groups, none_at_batch_1_on_a_2x2_image_four_corners_read_more) {
  expect_conv_by_definition({{1, 32, 2, 2, 32, 2, 2, 3, 1, 1, true, relu}, 1, grouping::none});
}
