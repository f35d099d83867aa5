// sinew/optim/optimizer_spec.hpp: what an optimizer policy must provide.
//
// Contract. An optimizer O updates a flat parameter span from the flat gradient span of the same size
// (the network's buffers; see model.hpp), keeping any state (momentum, moments) in flat buffers of its own.
//   O::options                   its hyper-parameters, an aggregate with defaults (lr first);
//   O(options, n)                creates state for n parameters;
//   o.step(params, grads)        one update; params and grads have size n; grads are not modified;
//   o.learning_rate() / o.set_learning_rate(lr)
//                                read and set the current rate (LR schedules call the setter each step);
//   O::kName                     "sgd", "adam", ... for reports.
// Updates are element-wise, so a parameter server may call step() on any sub-range with an optimizer
// constructed for that range's size.
// Optional (dist::ParameterServer needs it): o.hyper_parameters() returns options that construct a like
// optimizer, O(o.hyper_parameters(), m): the servers build one per shard.
// Optional (req::has_range_step; the all-reduce strategies use it to update each gradient bucket as soon as its
// all-reduce has ended, while the others are still in flight):
//   o.step_range(params, grads, begin, end)
//                                one step's update of params[begin, end) from grads[begin, end) (the spans are
//                                the whole n), exactly as step() updates those elements;
//   o.end_step()                 after the ranges of one step, disjoint and covering [0, n): counts the step.
// Optional (req::has_block_step; dist::Local's update inside backward uses it, core/in_backward_update.hpp):
//   o.step_block(params, g, begin, end)
//                                step_range's update of params[begin, end) from their gradients alone, g[0,
//                                end - begin): a block that backward has just computed, which the gradient
//                                buffer does not hold.
// step(p, g) is step_range(p, g, 0, n) followed by end_step(); ranges that begin at multiples of 16 floats give
// the same floats bit for bit (Sgd, Adam and RmsProp are element-wise, and the SIMD body then covers the same
// elements: their scalar tail may round otherwise, its std::fma being fused where a SIMD fma may not be). A
// network's layers start 64-byte aligned, so buckets cut on them, and pieces of them, begin there.
#pragma once

#include <concepts>
#include <cstddef>
#include <span>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sinew {

namespace req {
template <class O>
concept has_options = requires { typename O::options; } && std::constructible_from<O, typename O::options, std::size_t>;
template <class O>
concept has_step = requires(O& o, std::span<float> p, std::span<const float> g) {
  { o.step(p, g) };
};
template <class O>
concept has_learning_rate = requires(O& o, float lr) {
  { o.learning_rate() } -> std::convertible_to<float>;
  { o.set_learning_rate(lr) };
  { O::kName } -> std::convertible_to<std::string_view>;
};
}  // namespace req

namespace optim {
/// An optimizer's state for a checkpoint: its buffers by name, viewing its own storage, and its step count.
struct StateView {
  std::vector<std::pair<std::string, std::span<float>>> buffers;  ///< "momentum", "exp_avg", ... (may be empty)
  std::int64_t steps = 0;                                         ///< updates so far (Adam's bias correction)
};
}  // namespace optim

namespace req {
/// Optional: what a checkpoint saves and restores (see the contract above).
template <class O>
concept has_state = requires(O& o, std::int64_t n) {
  { o.state() } -> std::same_as<optim::StateView>;
  { o.set_steps(n) };
};
/// Optional: updating one step in ranges (see the contract above).
template <class O>
concept has_range_step = requires(O& o, std::span<float> p, std::span<const float> g, std::size_t i) {
  { o.step_range(p, g, i, i) };
  { o.end_step() };
};
/// Optional: updating a range of one step from its gradients alone (see the contract above).
template <class O>
concept has_block_step = has_range_step<O> && requires(O& o, std::span<float> p, const float* g, std::size_t i) {
  { o.step_block(p, g, i, i) };
};
}  // namespace req

/// An optimizer policy.
template <class O>
concept OptimizerPolicy = req::has_options<O> && req::has_step<O> && req::has_learning_rate<O>;

namespace optim::example {
/// The smallest optimizer: plain gradient descent.
struct descent {
  static constexpr std::string_view kName = "descent";
  struct options {
    float lr = 0.1f;
  };
  descent(options o, std::size_t) : lr_(o.lr) {}
  void step(std::span<float> p, std::span<const float> g) {
    for (std::size_t i = 0; i < p.size(); ++i) p[i] -= lr_ * g[i];
  }
  float learning_rate() const { return lr_; }
  void set_learning_rate(float lr) { lr_ = lr; }
  options hyper_parameters() const { return {lr_}; }
  /// No buffers; descent does not count its steps.
  StateView state() { return {}; }
  void set_steps(std::int64_t) {}
  float lr_;
};
static_assert(OptimizerPolicy<descent> && req::has_state<descent>);
}  // namespace optim::example

}  // namespace sinew
