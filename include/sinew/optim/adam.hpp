// sinew/optim/adam.hpp: Adam and AdamW with torch.optim.Adam / AdamW's exact semantics, vectorised with xsimd.
#pragma once

#include <cmath>
#include <span>
#include <string>

#include "sinew/core/elementwise.hpp"
#include "sinew/core/error.hpp"
#include "sinew/core/parallel.hpp"
#include "sinew/optim/optimizer_spec.hpp"
#include "sinew/tensor/buffer.hpp"

namespace sinew::optim {

namespace detail {
/// torch.optim.Adam's and AdamW's arguments, which differ only in two defaults. One aggregate for both (not
/// AdamW's derived from Adam's: designated initializers such as {.lr = 3e-4f} cannot name a base's members).
template <float DefaultWeightDecay, bool DefaultDecoupled>
struct adam_options {
  /// learning rate
  float lr = 1e-3f;
  /// decay of the first moment (running mean of the gradient)
  float beta1 = 0.9f;
  /// decay of the second moment (running mean of its square)
  float beta2 = 0.999f;
  /// added to the square root of the second moment
  float eps = 1e-8f;
  /// L2 penalty added to the gradient; with `decoupled`, the parameters shrink by lr x weight_decay
  float weight_decay = DefaultWeightDecay;
  bool decoupled = DefaultDecoupled;  ///< AdamW

  /// The same values under the other defaults (Adam's options from AdamW's, and back).
  template <float W, bool D>
  operator adam_options<W, D>() const {  // NOLINT(google-explicit-constructor)
    return {lr, beta1, beta2, eps, weight_decay, decoupled};
  }
};
}  // namespace detail

/// Adam; with options::decoupled it is AdamW (weight decay applied to the parameters, not the gradient).
class Adam {
 public:
  /// for reports and checkpoints
  static constexpr std::string_view kName = "adam";
  /// torch.optim.Adam's arguments: weight_decay 0, not decoupled.
  using options = detail::adam_options<0.0f, false>;

  /// For n parameters; throws a training_error for a negative rate, betas outside [0, 1) or eps <= 0.
  Adam(options o, std::size_t n) : o_(o), m_(n), v_(n) {
    if (o.lr < 0) throw training_error("adam: the learning rate must not be negative, got " + std::to_string(o.lr));
    if (!(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1))
      throw training_error("adam: beta1 and beta2 must lie in [0, 1)");
    if (!(o.eps > 0)) throw training_error("adam: eps must be positive");
  }

  /// One update of the parameters p from their gradients g (p.size() == g.size() == n).
  void step(std::span<float> p, std::span<const float> g) {
    step_range(p, g, 0, p.size());
    end_step();
  }

  /// This step's update of p[from, to) only (optim/optimizer_spec.hpp: req::has_range_step), with the bias
  /// correction of step steps() + 1; end_step() ends it.
  void step_range(std::span<float> p, std::span<const float> g, std::size_t from, std::size_t to) {
    step_block(p, g.data() + from, from, to);
  }
  /// The same from the gradients of p[from, to) alone, at g[0, to - from) (optim/optimizer_spec.hpp:
  /// req::has_block_step): what an update inside backward reads from a block it has just computed.
  void step_block(std::span<float> p, const float* g, std::size_t from, std::size_t to) {
    const long t = t_ + 1;
    const float b1 = o_.beta1, b2 = o_.beta2, eps = o_.eps, lr = o_.lr;
    const float bc1 = 1 - float(std::pow(double(b1), double(t)));
    const float bc2 = 1 - float(std::pow(double(b2), double(t)));
    const float step_size = lr / bc1, inv_sqrt_bc2 = 1 / std::sqrt(bc2);
    const float l2 = o_.decoupled ? 0.0f : o_.weight_decay;
    const float shrink = o_.decoupled ? 1 - lr * o_.weight_decay : 1.0f;
    float* pp = p.data();
    float *mp = m_.data(), *vp = v_.data();
    parallel_ranges(to - from, [&](std::size_t begin, std::size_t end) {
      simd::transform(from + begin, from + end, [&](auto x, std::size_t i) {
        using V = decltype(x);
        const V w = simd::load<V>(pp + i) * V(shrink);
        const V d = simd::fma(V(l2), w, simd::load<V>(g + (i - from)));
        const V m = simd::fma(V(b1), simd::load<V>(mp + i), V(1 - b1) * d);
        const V v = simd::fma(V(b2), simd::load<V>(vp + i), V(1 - b2) * d * d);
        simd::store(mp + i, m);
        simd::store(vp + i, v);
        const V denom = simd::fma(simd::sqrt(v), V(inv_sqrt_bc2), V(eps));
        simd::store(pp + i, w - V(step_size) * m / denom);
      });
    }, 16, kUpdateGrain);
  }
  /// Counts the step whose ranges step_range() updated.
  void end_step() noexcept { ++t_; }

  /// The Optimizer contract (optim/optimizer_spec.hpp): the current rate, setting it (the trainer does before
  /// every step, from its schedule), the options it was built with.
  /// @{
  float learning_rate() const noexcept { return o_.lr; }
  void set_learning_rate(float lr) noexcept { o_.lr = lr; }
  const options& hyper_parameters() const noexcept { return o_; }
  /// @}
  /// Updates taken.
  long steps() const noexcept { return t_; }
  /// torch.optim.Adam's exp_avg and exp_avg_sq, and its step.
  StateView state() { return {{{"exp_avg", m_.span()}, {"exp_avg_sq", v_.span()}}, std::int64_t(t_)}; }
  /// Sets the updates taken (a resumed run: the bias correction continues).
  void set_steps(std::int64_t steps) noexcept { t_ = long(steps); }

 private:
  options o_;
  AlignedBuffer<float> m_, v_;
  long t_ = 0;
};

/// AdamW: Adam with decoupled weight decay (default 0.01, as torch.optim.AdamW).
class AdamW : public Adam {
 public:
  /// for reports and checkpoints
  static constexpr std::string_view kName = "adamw";
  /// torch.optim.AdamW's arguments: Adam's with weight_decay 0.01, decoupled.
  using options = detail::adam_options<0.01f, true>;
  /// For n parameters.
  AdamW(options o, std::size_t n) : Adam(Adam::options(o), n) {}
  /// Its options, so that a parameter server can build a like optimizer: AdamW(o.hyper_parameters(), n).
  options hyper_parameters() const noexcept { return Adam::hyper_parameters(); }
};

static_assert(OptimizerPolicy<Adam> && req::has_state<Adam> && req::has_range_step<Adam> &&
              req::has_block_step<Adam>);
static_assert(OptimizerPolicy<AdamW>);

}  // namespace sinew::optim
