// sinew/optim/sgd.hpp: stochastic gradient descent with momentum, Nesterov momentum and weight decay,
// with torch.optim.SGD's exact semantics, vectorised with xsimd over the flat buffers.
#pragma once

#include <span>
#include <string>

#include "sinew/core/elementwise.hpp"
#include "sinew/core/error.hpp"
#include "sinew/core/parallel.hpp"
#include "sinew/optim/optimizer_spec.hpp"
#include "sinew/tensor/buffer.hpp"

namespace sinew::optim {

/// Stochastic gradient descent with momentum, Nesterov momentum and weight decay, as torch.optim.SGD.
class Sgd {
 public:
  /// for reports and checkpoints
  static constexpr std::string_view kName = "sgd";
  /// torch.optim.SGD's arguments.
  struct options {
    /// learning rate, >= 0
    float lr = 0.01f;
    /// momentum, >= 0 (0: none)
    float momentum = 0.0f;
    /// dampening of the momentum
    float dampening = 0.0f;
    float weight_decay = 0.0f;  ///< L2 penalty added to the gradient
    /// Nesterov momentum (needs momentum > 0 and dampening 0)
    bool nesterov = false;
  };

  /// For n parameters; throws a training_error for options PyTorch would refuse.
  Sgd(options o, std::size_t n) : o_(o), momentum_(o.momentum != 0 ? n : 0) {
    if (o.lr < 0) throw training_error("sgd: the learning rate must not be negative, got " + std::to_string(o.lr));
    if (o.momentum < 0) throw training_error("sgd: momentum must not be negative");
    if (o.nesterov && (o.momentum <= 0 || o.dampening != 0))
      throw training_error("sgd: Nesterov momentum needs momentum > 0 and dampening = 0 (as in PyTorch)");
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
    float* pp = p.data();
    float* bp = momentum_.data();
    const float lr = o_.lr, wd = o_.weight_decay, mu = o_.momentum, damp = 1 - o_.dampening;
    const bool first = steps_ == 0, nesterov = o_.nesterov, has_momentum = mu != 0;
    parallel_ranges(to - from, [&](std::size_t begin, std::size_t end) {
      simd::transform(from + begin, from + end, [&](auto v, std::size_t i) {
        using V = decltype(v);
        V d = simd::fma(V(wd), simd::load<V>(pp + i), simd::load<V>(g + (i - from)));
        if (has_momentum) {
          // PyTorch starts the momentum buffer at the first gradient, undamped.
          const V buf = first ? d : simd::fma(V(mu), simd::load<V>(bp + i), V(damp) * d);
          simd::store(bp + i, buf);
          d = nesterov ? simd::fma(V(mu), buf, d) : buf;
        }
        simd::store(pp + i, simd::fma(V(-lr), d, simd::load<V>(pp + i)));
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
  /// torch.optim.SGD's momentum_buffer (absent without momentum) and the steps taken (the first starts it).
  StateView state() {
    StateView v{{}, steps_};
    if (momentum_.size() > 0) v.buffers.emplace_back("momentum_buffer", momentum_.span());
    return v;
  }
  /// Sets the updates taken (a resumed run).
  void set_steps(std::int64_t steps) noexcept { steps_ = steps; }

 private:
  options o_;
  AlignedBuffer<float> momentum_;
  std::int64_t steps_ = 0;
};

static_assert(OptimizerPolicy<Sgd> && req::has_state<Sgd> && req::has_range_step<Sgd> &&
              req::has_block_step<Sgd>);

}  // namespace sinew::optim
