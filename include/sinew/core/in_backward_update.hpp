// sinew/core/in_backward_update.hpp: the optimizer's update of a layer's parameters, handed to the ops that can
// apply it inside their own backward pass, block by block, from gradients they never write to the gradient buffer.
//
// Why: a large fully connected layer's backward reads its weights (backward data), writes their gradient
// (backward weights) and the update then reads the weights, the gradient and the optimizer's state and writes the
// weights and the state: 32 bytes a parameter at the memory's pace at batch 42. An op that computes its gradient
// block by block into a scratch in the cache and updates each block there moves 16 (backend/onednn/
// fused_dense_update.hpp). The Model holds one (Model::set_in_backward_update) and passes it to its ops with their
// parameter slots; dist::Local provides the update (its options.update_in_backward) and the Trainer arms it for the
// backward of each step whose gradients are not summed over micro-batches. In core/, below the backends and dist/,
// because both sides name it and neither may include the other (docs/architecture.md).
#pragma once

#include <cstddef>
#include <functional>
#include <utility>

namespace sinew {

/// Updates parameters of the model's flat buffer from the gradients of just those parameters. Default: none
/// (every op writes its gradients, and the update runs after backward).
class InBackwardUpdate {
 public:
  /// update(from, to, grad): one step's update of the parameters [from, to) of the flat buffer from their
  /// gradients grad[0, to - from) (an optimizer's step_block, optim/optimizer_spec.hpp).
  using update_fn = std::function<void(std::size_t from, std::size_t to, const float* grad)>;

  InBackwardUpdate() = default;

  /// The update, and the start of the flat parameter buffer whose offsets it takes.
  void set(update_fn update, const float* params) {
    update_ = std::move(update);
    params_ = params;
  }
  /// Whether an update is set: ops set up their path for it only then.
  bool has_update() const noexcept { return static_cast<bool>(update_); }
  /// Whether ops update in this backward: the Model arms it for one backward when the Trainer asks.
  bool armed() const noexcept { return armed_ && update_; }
  /// Arms (or disarms) the update for the backward passes to come.
  void arm(bool armed) noexcept { armed_ = armed; }

  /// Updates the n parameters at `p` (inside the flat buffer) from their gradients `grad`.
  void operator()(const float* p, std::size_t n, const float* grad) const {
    const auto from = static_cast<std::size_t>(p - params_);
    update_(from, from + n, grad);
  }

 private:
  update_fn update_;
  const float* params_ = nullptr;
  bool armed_ = false;
};

}  // namespace sinew
