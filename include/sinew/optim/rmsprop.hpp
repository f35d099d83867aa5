// sinew/optim/rmsprop.hpp: RMSProp with torch.optim.RMSprop's semantics (centered = false).
#pragma once

#include <span>
#include <string>

#include "sinew/core/elementwise.hpp"
#include "sinew/core/error.hpp"
#include "sinew/core/parallel.hpp"
#include "sinew/optim/optimizer_spec.hpp"
#include "sinew/tensor/buffer.hpp"

namespace sinew::optim {

/// RMSprop with torch.optim.RMSprop's semantics (centered=False), vectorised with xsimd.
class RmsProp {
 public:
  /// for reports and checkpoints
  static constexpr std::string_view kName = "rmsprop";
  /// torch.optim.RMSprop's arguments.
  struct options {
    /// learning rate
    float lr = 1e-2f;
    /// decay of the running mean of the squared gradient, in [0, 1)
    float alpha = 0.99f;
    /// added to the root of that mean
    float eps = 1e-8f;
    /// L2 penalty added to the gradient
    float weight_decay = 0.0f;
    /// momentum of the update (0: none)
    float momentum = 0.0f;
  };

  /// For n parameters; throws a training_error for a negative rate or alpha outside [0, 1).
  RmsProp(options o, std::size_t n) : o_(o), square_(n), momentum_(o.momentum != 0 ? n : 0) {
    if (o.lr < 0) throw training_error("rmsprop: the learning rate must not be negative");
    if (!(o.alpha >= 0 && o.alpha < 1)) throw training_error("rmsprop: alpha must lie in [0, 1)");
  }

  /// One update of the parameters p from their gradients g (p.size() == g.size() == n).
  void step(std::span<float> p, std::span<const float> g) {
    step_range(p, g, 0, p.size());
    end_step();
  }

  /// This step's update of p[from, to) only (optim/optimizer_spec.hpp: req::has_range_step); end_step() ends it.
  void step_range(std::span<float> p, std::span<const float> g, std::size_t from, std::size_t to) {
    step_block(p, g.data() + from, from, to);
  }
  /// The same from the gradients of p[from, to) alone, at g[0, to - from) (optim/optimizer_spec.hpp:
  /// req::has_block_step): what an update inside backward reads from a block it has just computed.
  void step_block(std::span<float> p, const float* g, std::size_t from, std::size_t to) {
    const float a = o_.alpha, eps = o_.eps, lr = o_.lr, wd = o_.weight_decay, mu = o_.momentum;
    const bool has_momentum = mu != 0;
    float* pp = p.data();
    float *sp = square_.data(), *bp = momentum_.data();
    parallel_ranges(to - from, [&](std::size_t begin, std::size_t end) {
      simd::transform(from + begin, from + end, [&](auto x, std::size_t i) {
        using V = decltype(x);
        const V w = simd::load<V>(pp + i);
        const V d = simd::fma(V(wd), w, simd::load<V>(g + (i - from)));
        const V s = simd::fma(V(a), simd::load<V>(sp + i), V(1 - a) * d * d);
        simd::store(sp + i, s);
        V u = d / (simd::sqrt(s) + V(eps));
        if (has_momentum) {
          u = simd::fma(V(mu), simd::load<V>(bp + i), u);
          simd::store(bp + i, u);
        }
        simd::store(pp + i, simd::fma(V(-lr), u, w));
      });
    }, 16, kUpdateGrain);
  }
  /// Counts the step whose ranges step_range() updated.
  void end_step() noexcept { ++steps_; }

  /// The Optimizer contract (optim/optimizer_spec.hpp): the current rate, setting it (the trainer does before
  /// every step, from its schedule), the options it was built with.
  /// @{
  float learning_rate() const noexcept { return o_.lr; }
  void set_learning_rate(float lr) noexcept { o_.lr = lr; }
  const options& hyper_parameters() const noexcept { return o_; }
  /// @}
  /// torch.optim.RMSprop's square_avg and momentum_buffer (absent without momentum); it does not need a count.
  StateView state() {
    StateView v{{{"square_avg", square_.span()}}, steps_};
    if (momentum_.size() > 0) v.buffers.emplace_back("momentum_buffer", momentum_.span());
    return v;
  }
  /// Sets the updates taken (a resumed run).
  void set_steps(std::int64_t steps) noexcept { steps_ = steps; }

 private:
  options o_;
  AlignedBuffer<float> square_, momentum_;
  std::int64_t steps_ = 0;
};

static_assert(OptimizerPolicy<RmsProp> && req::has_state<RmsProp> && req::has_range_step<RmsProp> &&
              req::has_block_step<RmsProp>);

}  // namespace sinew::optim
