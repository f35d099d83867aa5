// tests/support/onednn_vs_eigen.hpp: the same network on OneDnn and Eigen from the same seed must give the same
// outputs, parameter gradients, input gradients and running statistics. Include sinew/backend/eigen.hpp
// before this header (EIGEN_USE_THREADS must precede the Tensor module).
//
// Dropout: both backends draw the mask of plain-NCHW element e from the model seed, the node and the step
// (backend/simd/dropout.hpp), so training-mode steps compare identical masks; the evaluation step compares
// the identity. BatchNorm2d: training steps compare batch statistics and the running statistics they leave,
// the evaluation step normalises with those running statistics.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sinew/backend/onednn.hpp"
#include "sinew/model.hpp"
#include "sinew/nets/state_dict.hpp"

namespace sinew::test {

/// The largest |a - b| / max(1, max |a|): how far apart two tensors are, relative to the first one's scale.
inline double scaled_difference(std::span<const float> a, std::span<const float> b) {
  double scale = 1, worst = 0;
  for (float v : a) scale = std::max(scale, double(std::fabs(v)));
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    worst = std::max(worst, std::fabs(double(a[i]) - double(b[i])) / scale);
  return worst;
}

/// |a - b| <= tol * max(1, max |ref|) entry by entry: a tolerance relative to the tensor's scale, so small
/// entries of a large tensor are not held to a relative bound that float rounding cannot meet. Returns the
/// largest |a - b| / max(1, max |ref|) seen, for the report.
inline double expect_same(std::span<const float> ref, std::span<const float> got, const std::string& what,
                          double tol = 1e-4) {
  EXPECT_EQ(ref.size(), got.size()) << what << " has a different size on the two backends";
  if (ref.size() != got.size()) return 1e30;
  double scale = 1;
  for (float v : ref) scale = std::max(scale, double(std::fabs(v)));
  double worst = 0;
  int reported = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double err = std::fabs(double(ref[i]) - double(got[i])) / scale;
    worst = std::max(worst, std::isnan(err) ? 1e30 : err);
    if (!(err <= tol) && reported++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: onednn " << ref[i] << ", eigen " << got[i] << " (scale " << scale
                    << ")";
  }
  return worst;
}

struct EquivalenceOptions {
  int batch = 3;
  std::uint64_t seed = 5;
  int eigen_threads = 0;    ///< 0: the hardware's
  int training_steps = 2;   ///< the second reuses every plan and buffer, as training does
  bool eval_step = true;    ///< then one step in evaluation mode (running statistics, no dropout)
  double tol = 1e-4;
  /// When larger than tol, the tolerance of each parameter's gradient measured against its own scale (the whole
  /// gradient, measured against the net's largest entry, keeps tol): for results rounded to bf16 on the way, where
  /// a small gradient summed from many rounded terms moves more, relative to itself, than the net's largest.
  double parameter_tol = 0;
  /// When > 0, each tensor's tolerance is max(tol, sensitivity * d), where d is how far OneDnn's own result
  /// moves when every input float moves by one ulp, the larger of the moves up and down (two more models, run
  /// alongside: one move alone measured 5.8e-5 and 1.4e-4 on ResNet-34's parameter gradients in two builds that
  /// differed only in one batch norm's layout). For training steps whose
  /// float result is ill-conditioned (deep BatchNorm networks at initialisation, with few values per channel),
  /// no float implementation can hold 1e-4; the check then asks that Eigen stay within a few times the
  /// rounding sensitivity of the reference itself.
  double sensitivity = 0;
  /// When != 0, added to every BatchNorm bias (every ".bias" in parameters() but the classifier's "fc.bias")
  /// of both models before the first step: it keeps the inputs of the ReLUs that follow BatchNorm away from
  /// ReLU's kink. Without it, an input within float rounding of 0 (about one in a million at initialisation)
  /// falls on different sides in the two backends depending on the kernels oneDNN picks for the CPU (AVX2 or
  /// AVX-512), and BatchNorm's backward spreads that one element's gradient over its channel and every earlier
  /// layer: a difference of a few percent that says nothing about either backend. With +3, a BatchNorm output
  /// of n values per channel (|x_hat| <= sqrt(n - 1)) can only reach the kink for n >= 10 and then with a
  /// density at 0 about 90 times lower.
  float batch_norm_bias_shift = 0;
  /// The input is this times standard normal noise: 8 puts a sixth of a ReLU6's inputs past its kink at 6.
  float input_scale = 1;
};

/// The same network on both backends with the same seed: equal initial parameters, then forward on the
/// same batch and backward with the same output gradient must agree, step after step (each parameter's gradient
/// as a tensor of its own, named by its state_dict key). Returns the largest
/// scaled difference seen over all compared tensors (also recorded as the test's "max_scaled_error" and
/// printed, so CI logs show how close the backends came).
/// A and B default to OneDnn and Eigen (the reports say "onednn" and "eigen"); tests/backend/test_mix.cpp
/// compares a backend::Mix with each of them. A runs on the default threads, B on o.eigen_threads.
template <class N, class OneDnn = backend::OneDnn, class EigenB = backend::Eigen>
double expect_equivalent(EquivalenceOptions o = {}) {
  typename OneDnn::context octx{BackendOptions{}};
  typename EigenB::context ectx{BackendOptions{.threads = o.eigen_threads}};
  Model<N, OneDnn> a(octx, ModelOptions{.seed = o.seed, .input_gradient = true});
  Model<N, EigenB> b(ectx, ModelOptions{.seed = o.seed, .input_gradient = true});
  EXPECT_TRUE(std::ranges::equal(a.parameters(), b.parameters())) << "the same seed drew different parameters";
  // OneDnn on the input moved by one ulp up (c) and down (c2), with o.sensitivity.
  std::unique_ptr<Model<N, OneDnn>> c, c2;
  if (o.sensitivity > 0) {
    c = std::make_unique<Model<N, OneDnn>>(octx, ModelOptions{.seed = o.seed, .input_gradient = true});
    c2 = std::make_unique<Model<N, OneDnn>>(octx, ModelOptions{.seed = o.seed, .input_gradient = true});
  }
  // The same shift on every model (see EquivalenceOptions::batch_norm_bias_shift).
  auto shift = [&](std::span<float> p) {
    int shifted = 0;
    for (const StateEntry& e : state_dict_entries<N>()) {
      if (!e.is_parameter() || !e.key.ends_with(".bias") || e.key.starts_with("fc.")) continue;
      for (std::size_t i = e.offset; i < e.offset + e.size(); ++i) p[i] += o.batch_norm_bias_shift;
      ++shifted;
    }
    EXPECT_GT(shifted, 0) << "batch_norm_bias_shift found no BatchNorm bias to shift";
  };
  if (o.batch_norm_bias_shift != 0) {
    shift(a.parameters());
    shift(b.parameters());
    if (c) shift(c->parameters()), shift(c2->parameters());
  }

  // The parameters' tensors, each at its offset in parameters() (which pads them apart for alignment).
  std::vector<StateEntry> parameter_entries;
  for (const StateEntry& e : state_dict_entries<N>())
    if (e.is_parameter()) {
      EXPECT_LE(e.offset + e.size(), a.parameters().size()) << e.key << " lies past the end of parameters()";
      if (e.offset + e.size() <= a.parameters().size()) parameter_entries.push_back(e);
    }
  EXPECT_FALSE(parameter_entries.empty() && !a.parameters().empty()) << "no state_dict entry names a parameter";

  Rng rng(o.seed + 1);
  std::vector<float> x(std::size_t(o.batch) * N::input_shape::kSize);
  std::vector<float> r(std::size_t(o.batch) * N::output_shape::kSize);
  for (float& v : x) v = o.input_scale * rng.normal();
  for (float& v : r) v = rng.normal();
  std::vector<float> x_moved(x.size());
  std::vector<float> yc, gc, dxc, bc, yc2, gc2, dxc2, bc2;
  double worst = 0;
  // The tensor whose difference came nearest its own tolerance (tolerances differ per tensor when calibrated).
  struct {
    double difference = 0, tolerance = 1;
    std::string what = "output";
  } nearest;
  auto compare = [&](std::span<const float> ref, std::span<const float> got, const std::string& what, double t) {
    const double d = expect_same(ref, got, what, t);
    worst = std::max(worst, d);
    if (d / t > nearest.difference / nearest.tolerance) nearest = {d, t, what};
  };
  const int steps = o.training_steps + (o.eval_step ? 1 : 0);
  for (int step = 0; step < steps; ++step) {
    const bool training = step < o.training_steps;
    a.set_training(training);
    b.set_training(training);
    const std::string at = training ? " at training step " + std::to_string(step)
                                    : " at the evaluation step after " + std::to_string(o.training_steps) +
                                          " training steps";
    const auto run_moved = [&](Model<N, OneDnn>& m, float towards, std::vector<float>& y_out,
                               std::vector<float>& g_out, std::vector<float>& dx_out, std::vector<float>& b_out) {
      m.set_training(training);
      for (std::size_t i = 0; i < x.size(); ++i) x_moved[i] = std::nextafter(x[i], towards);
      const auto y = m.forward(x_moved, o.batch);
      y_out.assign(y.begin(), y.end());
      m.backward(r);
      g_out.assign(m.gradients().begin(), m.gradients().end());
      dx_out = m.input_gradient();
      b_out.assign(m.buffers().begin(), m.buffers().end());
    };
    if (c) {
      run_moved(*c, std::numeric_limits<float>::infinity(), yc, gc, dxc, bc);
      run_moved(*c2, -std::numeric_limits<float>::infinity(), yc2, gc2, dxc2, bc2);
    }
    // The tolerance for a tensor: o.tol, or a multiple of OneDnn's own one-ulp sensitivity if larger.
    auto tol = [&](std::span<const float> ref, std::span<const float> moved, std::span<const float> moved2,
                   const char* what) {
      if (!c) return o.tol;
      const double d = std::max(scaled_difference(ref, moved), scaled_difference(ref, moved2));
      const double t = std::max(o.tol, o.sensitivity * d);
      std::printf("%s%s: tolerance %.3g\n", what, at.c_str(), t);
      return t;
    };
    const auto ya = a.forward(x, o.batch);
    const std::vector<float> ya_copy(ya.begin(), ya.end());
    const auto yb = b.forward(x, o.batch);
    compare(ya_copy, yb, "output" + at, tol(ya_copy, yc, yc2, "output"));
    a.backward(r);
    b.backward(r);
    // The whole gradient against the net's largest, then each parameter's against its own scale: a layer whose
    // gradient is small beside another's is held to its own values too.
    compare(a.gradients(), b.gradients(), "parameter gradient" + at, tol(a.gradients(), gc, gc2, "parameter gradient"));
    for (const StateEntry& e : parameter_entries) {
      const auto slice = [&](std::span<const float> all) { return all.subspan(e.offset, e.size()); };
      const std::string what = "gradient of " + e.key;
      const double t = c ? tol(slice(a.gradients()), slice(gc), slice(gc2), what.c_str()) : o.tol;
      compare(slice(a.gradients()), slice(b.gradients()), what + at, std::max(t, o.parameter_tol));
    }
    const std::vector<float> dxa = a.input_gradient();
    compare(dxa, b.input_gradient(), "input gradient" + at, tol(dxa, dxc, dxc2, "input gradient"));
    compare(a.buffers(), b.buffers(), "running statistics" + at, tol(a.buffers(), bc, bc2, "running statistics"));
    for (float& v : x) v *= -0.5f;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", worst);
  ::testing::Test::RecordProperty("max_scaled_error", text);
  std::printf("largest difference between the backends: %s of its tensor's scale; "
              "nearest its tolerance: %.3g in the %s (tolerance %.3g)\n",
              text, nearest.difference, nearest.what.c_str(), nearest.tolerance);
  return worst;
}

}  // namespace sinew::test
