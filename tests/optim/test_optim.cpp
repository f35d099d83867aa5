// Optimizers against scalar transcriptions of torch.optim's update rules, over several steps and on
// sizes that exercise both the SIMD body and the scalar tail (and the multi-threaded split).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <vector>

#include "sinew/core/rng.hpp"
#include "sinew/optim.hpp"

namespace {
using namespace sinew;

struct Problem {
  std::vector<float> p, g;
  explicit Problem(std::size_t n, std::uint64_t seed = 3) : p(n), g(n) {
    Rng rng(seed);
    for (auto& v : p) v = rng.normal();
  }
  void new_gradient(int step) {
    Rng rng(100 + step);
    for (auto& v : g) v = rng.normal();
  }
};

void expect_all_near(const std::vector<float>& a, const std::vector<double>& b) {
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-5 * (1 + std::fabs(b[i]))) << i;
}

class sgd_matches_torch : public ::testing::TestWithParam<std::size_t> {};

TEST_P(sgd_matches_torch, momentum_nesterov_weight_decay) {
  const std::size_t n = GetParam();
  const optim::Sgd::options o{.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.01f, .nesterov = true};
  Problem x(n);
  std::vector<double> p(x.p.begin(), x.p.end()), buf(n);
  optim::Sgd sgd(o, n);
  for (int step = 0; step < 4; ++step) {
    x.new_gradient(step);
    sgd.step(x.p, x.g);
    for (std::size_t i = 0; i < n; ++i) {
      double d = x.g[i] + 0.01 * p[i];
      buf[i] = step == 0 ? d : 0.9 * buf[i] + d;
      d = d + 0.9 * buf[i];
      p[i] -= 0.1 * d;
    }
  }
  expect_all_near(x.p, p);
}

TEST_P(sgd_matches_torch, dampened_momentum) {
  const std::size_t n = GetParam();
  Problem x(n);
  std::vector<double> p(x.p.begin(), x.p.end()), buf(n);
  optim::Sgd sgd({.lr = 0.05f, .momentum = 0.5f, .dampening = 0.3f}, n);
  for (int step = 0; step < 3; ++step) {
    x.new_gradient(step);
    sgd.step(x.p, x.g);
    for (std::size_t i = 0; i < n; ++i) {
      buf[i] = step == 0 ? x.g[i] : 0.5 * buf[i] + 0.7 * x.g[i];
      p[i] -= 0.05 * buf[i];
    }
  }
  expect_all_near(x.p, p);
}

INSTANTIATE_TEST_SUITE_P(sizes, sgd_matches_torch, ::testing::Values(1, 13, 64, 1000, 200003));

class adam_matches_torch : public ::testing::TestWithParam<bool> {};

TEST_P(adam_matches_torch, five_steps) {
  const bool decoupled = GetParam();
  const std::size_t n = 77777;
  Problem x(n);
  std::vector<double> p(x.p.begin(), x.p.end()), m(n), v(n);
  const double lr = 1e-2, b1 = 0.9, b2 = 0.99, eps = 1e-8, wd = 0.05;
  optim::Adam adam({.lr = float(lr), .beta1 = float(b1), .beta2 = float(b2), .eps = float(eps),
                    .weight_decay = float(wd), .decoupled = decoupled},
                   n);
  for (int t = 1; t <= 5; ++t) {
    x.new_gradient(t);
    adam.step(x.p, x.g);
    for (std::size_t i = 0; i < n; ++i) {
      if (decoupled) p[i] *= 1 - lr * wd;
      const double d = x.g[i] + (decoupled ? 0 : wd * p[i]);
      m[i] = b1 * m[i] + (1 - b1) * d;
      v[i] = b2 * v[i] + (1 - b2) * d * d;
      const double denom = std::sqrt(v[i]) / std::sqrt(1 - std::pow(b2, t)) + eps;
      p[i] -= lr / (1 - std::pow(b1, t)) * m[i] / denom;
    }
  }
  expect_all_near(x.p, p);
}

INSTANTIATE_TEST_SUITE_P(modes, adam_matches_torch, ::testing::Values(false, true));

TEST(rmsprop_matches_torch, with_momentum) {
  const std::size_t n = 1001;
  Problem x(n);
  std::vector<double> p(x.p.begin(), x.p.end()), s(n), b(n);
  optim::RmsProp rms({.lr = 0.01f, .alpha = 0.9f, .eps = 1e-8f, .momentum = 0.5f}, n);
  for (int t = 0; t < 4; ++t) {
    x.new_gradient(t);
    rms.step(x.p, x.g);
    for (std::size_t i = 0; i < n; ++i) {
      s[i] = 0.9 * s[i] + 0.1 * double(x.g[i]) * x.g[i];
      b[i] = 0.5 * b[i] + x.g[i] / (std::sqrt(s[i]) + 1e-8);
      p[i] -= 0.01 * b[i];
    }
  }
  expect_all_near(x.p, p);
}

TEST(adamw, defaults_to_decoupled_weight_decay_of_one_hundredth) {
  optim::AdamW::options o;
  EXPECT_TRUE(o.decoupled);
  EXPECT_FLOAT_EQ(o.weight_decay, 0.01f);
  // Designated initializers work as for every other optimizer's options (the guide's table is compiled so).
  const optim::AdamW::options some{.lr = 3e-4f, .eps = 1e-6f};
  EXPECT_FLOAT_EQ(some.weight_decay, 0.01f);
  const optim::AdamW adamw(some, 4);
  EXPECT_FLOAT_EQ(adamw.hyper_parameters().lr, 3e-4f);
  EXPECT_FLOAT_EQ(adamw.hyper_parameters().eps, 1e-6f);
  EXPECT_TRUE(adamw.hyper_parameters().decoupled);
}

TEST(sgd, rejects_nesterov_without_momentum) {
  EXPECT_THROW(optim::Sgd({.lr = 0.1f, .nesterov = true}, 10), training_error);
}

// What the all-reduce strategies do (dist/detail/allreduce_common.hpp): update bucket by bucket, in pieces, last
// layers first, as each bucket's all-reduce ends; every other piece here with step_block, from its gradients alone,
// as dist::Local's update inside backward does. Pieces that begin at multiples of 16 floats (where layers begin)
// must give step()'s floats, whatever the SIMD width.
template <class O>
void expect_pieces_equal_whole_steps(const typename O::options& o) {
  const std::size_t n = 1000;
  Problem whole(n), pieces(n);
  O a(o, n), b(o, n);
  const std::size_t cuts[] = {1000, 624, 608, 32, 16, 0};  // [624, 1000), [608, 624), [32, 608), [16, 32), [0, 16)
  for (int step = 0; step < 3; ++step) {
    whole.new_gradient(step), pieces.new_gradient(step);
    a.step(whole.p, whole.g);
    for (std::size_t i = 0; i + 1 < std::size(cuts); ++i) {
      const std::size_t from = cuts[i + 1], to = cuts[i];
      if (i % 2 == 0) {
        b.step_range(pieces.p, pieces.g, from, to);
      } else {  // step_block from a copy of the piece's gradients alone (an update inside backward)
        const std::vector<float> block(pieces.g.begin() + std::ptrdiff_t(from), pieces.g.begin() + std::ptrdiff_t(to));
        b.step_block(pieces.p, block.data(), from, to);
      }
    }
    b.end_step();
  }
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(whole.p[i], pieces.p[i]) << i;
  const optim::StateView sa = a.state(), sb = b.state();
  EXPECT_EQ(sa.steps, sb.steps);
  ASSERT_EQ(sa.buffers.size(), sb.buffers.size());
  for (std::size_t k = 0; k < sa.buffers.size(); ++k)
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(sa.buffers[k].second[i], sb.buffers[k].second[i]) << k << " " << i;
}

TEST(step_range, pieces_in_any_order_equal_whole_steps_bit_for_bit) {
  expect_pieces_equal_whole_steps<optim::Sgd>({.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.01f, .nesterov = true});
  expect_pieces_equal_whole_steps<optim::Adam>({.lr = 0.01f, .weight_decay = 0.01f});
  expect_pieces_equal_whole_steps<optim::AdamW>({});
  expect_pieces_equal_whole_steps<optim::RmsProp>({.lr = 0.01f, .momentum = 0.9f});
}

// An update of more than 2 x kUpdateGrain floats is split over the threads (core/parallel.hpp); the split must
// cover every float once, the uneven tail included, and give one thread's floats.
template <class O>
void expect_threads_equal_one_thread(const typename O::options& o) {
  const std::size_t n = 2 * kUpdateGrain + 13;
  Problem one(n), two(n);
  O a(o, n), b(o, n);
  const int threads = omp_get_max_threads();
  for (int step = 0; step < 3; ++step) {
    one.new_gradient(step), two.new_gradient(step);
    omp_set_num_threads(1);
    a.step(one.p, one.g);
    omp_set_num_threads(2);
    b.step(two.p, two.g);
  }
  omp_set_num_threads(threads);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(one.p[i], two.p[i]) << i;
  const optim::StateView sa = a.state(), sb = b.state();
  for (std::size_t k = 0; k < sa.buffers.size(); ++k)
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(sa.buffers[k].second[i], sb.buffers[k].second[i]) << k << " " << i;
}

TEST(step, on_two_threads_equals_one_thread_bit_for_bit) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "two OpenMP threads under TSan: libgomp is not built with it (tests/sanitize/CMakeLists.txt)";
#endif
  expect_threads_equal_one_thread<optim::Sgd>({.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.01f});
  expect_threads_equal_one_thread<optim::Adam>({.lr = 0.01f, .weight_decay = 0.01f});
  expect_threads_equal_one_thread<optim::RmsProp>({.lr = 0.01f, .momentum = 0.9f});
}

TEST(schedule, step_decay_and_warmup_cosine) {
  const optim::StepDecay decay{.every = 10, .gamma = 0.5f};
  EXPECT_FLOAT_EQ(decay(1.0f, 25), 0.25f);
  const optim::WarmupCosine s{.warmup = 10, .total = 110, .floor = 0.0f};
  EXPECT_FLOAT_EQ(s(1.0f, 0), 0.1f);
  EXPECT_FLOAT_EQ(s(1.0f, 9), 1.0f);
  EXPECT_NEAR(s(1.0f, 60), 0.5f, 1e-6);
  EXPECT_NEAR(s(1.0f, 110), 0.0f, 1e-6);
}

}  // namespace
