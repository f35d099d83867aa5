// tests/support/gradient_check.hpp: the one numerical-gradient harness every layer and network goes through
// (dlib's test_layer, mlpack's JacobianTest).
//
// For f(x, w) = sum(output(x, w) * R) with fixed random R, the analytic gradients from backward(R) must
// equal central differences (f(v + h) - f(v - h)) / 2h for sampled inputs and parameters.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "sinew/core/rng.hpp"
#include "sinew/model.hpp"

namespace sinew::test {

struct GradientCheckOptions {
  int batch = 2;
  std::uint64_t seed = 7;
  float step = 1e-2f;       ///< h of the central difference
  float rtol = 2e-2f;       ///< relative tolerance
  float atol = 2e-3f;       ///< absolute tolerance, relative to the largest gradient seen
  int samples = 40;         ///< entries checked per tensor (inputs, parameters)
  bool training = true;     ///< the model's mode: batch statistics and dropout, or running statistics
  float input_scale = 1;    ///< the input is this times standard normal noise (8 reaches ReLU6's kink at 6)
};

template <class Net, class B>
class GradientCheck {
 public:
  explicit GradientCheck(GradientCheckOptions o = {})
      : o_(o), ctx_(BackendOptions{}), model_(ctx_, ModelOptions{.seed = o.seed, .input_gradient = true}) {
    model_.set_training(o.training);
    Rng rng(o.seed + 1);
    x_.resize(std::size_t(o.batch) * Net::input_shape::kSize);
    r_.resize(std::size_t(o.batch) * Net::output_shape::kSize);
    for (float& v : x_) v = o.input_scale * rng.normal();
    for (float& v : r_) v = rng.normal();
  }

  /// Returns the number of entries checked; records a failure for each mismatch.
  int run() {
    model_.set_step(0);
    model_.forward(x_, o_.batch);
    model_.backward(r_);
    const std::vector<float> dx = model_.input_gradient();
    const auto p = model_.parameters();
    const std::vector<float> dp(model_.gradients().begin(), model_.gradients().end());
    scale_ = 0;
    for (float v : dx) scale_ = std::max(scale_, std::fabs(v));
    for (float v : dp) scale_ = std::max(scale_, std::fabs(v));
    EXPECT_GT(scale_, 0.0f) << "every gradient is zero: backward computed nothing";

    Rng pick(o_.seed + 2);
    int checked = 0;
    for (int s = 0; s < o_.samples; ++s) {
      const std::size_t i = pick.below(x_.size());
      checked += compare("input", i, dx[i], [&](float d) { x_[i] += d; });
    }
    // Only the real parameters: the flat buffer also holds alignment padding, which must stay at zero gradient.
    for (int s = 0; s < o_.samples * 3 && !p.empty(); ++s) {
      const std::size_t i = pick.below(p.size());
      // A write through the span kept above: the model must hear of it (an evaluation reuses derived weights).
      checked += compare("parameter", i, dp[i], [&](float d) {
        p[i] += d;
        model_.parameters_changed();
      });
    }
    EXPECT_LE(skipped_, (checked + skipped_) / 10) << "too many entries sit on a kink; change the seed";
    return checked;
  }

 private:
  /// Every forward replays step 0, so Dropout draws the mask that backward() differentiated.
  double objective() {
    model_.set_step(0);
    const auto out = model_.forward(x_, o_.batch);
    double f = 0;
    for (std::size_t i = 0; i < out.size(); ++i) f += double(out[i]) * double(r_[i]);
    return f;
  }

  /// Central differences at h, h/4 and h/16. The entry passes when one of them agrees with the analytic
  /// value. ReLU and max pooling have kinks: a step that crosses one gives differences that disagree with
  /// each other, and such an entry is skipped as non-smooth (run() bounds how many). A wrong backward pass
  /// gives differences that agree with each other but not with the analytic value, and fails.
  template <class Nudge>
  int compare(const char* what, std::size_t i, float analytic, Nudge nudge) {
    double numeric[3] = {}, tol = 0;
    int k = 0;
    for (float h = o_.step; k < 3; h /= 4, ++k) {
      nudge(h);
      const double up = objective();
      nudge(-2 * h);
      const double down = objective();
      nudge(h);
      numeric[k] = (up - down) / (2.0 * h);
      tol = o_.atol * scale_ + o_.rtol * std::max(std::fabs(numeric[k]), std::fabs(double(analytic)));
      if (std::fabs(numeric[k] - analytic) <= tol) return 1;
    }
    const bool smooth = std::fabs(numeric[0] - numeric[1]) <= tol && std::fabs(numeric[1] - numeric[2]) <= tol;
    if (!smooth) {
      ++skipped_;
      return 0;
    }
    EXPECT_NEAR(analytic, numeric[2], tol) << what << " " << i;
    return 1;
  }

  GradientCheckOptions o_;
  typename B::context ctx_;
  Model<Net, B> model_;
  std::vector<float> x_, r_;
  float scale_ = 0;
  int skipped_ = 0;
};

template <class Net, class B>
int check_gradients(GradientCheckOptions o = {}) {
  return GradientCheck<Net, B>(o).run();
}

}  // namespace sinew::test
