// bench/support/train_step.hpp: backward and the optimizer's update of a benchmark's training step, as
// Trainer<Net, B> runs them with dist::Local: the update after backward (the default), or with
// `update_in_backward` the update inside backward where an op can run it (OneDnn's large fully connected layers,
// backend/onednn/fused_dense_update.hpp) and the rest after it. The benchmarks time the default, as the update
// inside backward gains only while the two threads share a cache: with this guest's two vCPUs far apart it trained
// AlexNet 0.85x (oneDNN 2.6) and 0.79x (oneDNN 3.7) as fast as the update after it
// (bench/results/2026-12-06-zen5-issue34-every-row-both-stacks).
#pragma once

#include "sinew/sinew.hpp"

namespace sinew::bench {

/// Binds a dist::Local to `model` and `optimizer` (which must outlive it), with the update inside backward where
/// `update_in_backward` says so.
template <class M, class O>
class local_step {
 public:
  local_step(M& model, O& optimizer, bool update_in_backward = false)
      : model_(model), optimizer_(optimizer), local_(dist::Local::options{.update_in_backward = update_in_backward}) {
    local_.template start<Sync>(model.parameters(), optimizer);
    model.set_in_backward_update(local_.in_backward_update());
  }
  local_step(const local_step&) = delete;  // local_'s update points at local_
  local_step& operator=(const local_step&) = delete;

  /// Backward and the update, their times added to phases.backward and phases.update (the update inside backward
  /// the update's, as the Trainer counts it); returns the seconds of the update inside backward, which a profile
  /// counts in the layers' backward.
  double backward_and_update(metrics::PhaseSeconds& phases) {
    metrics::Stopwatch watch;
    model_.backward_updating();
    const double inside = local_.in_backward_seconds();
    phases.backward += watch.lap() - inside;
    local_.template update<Sync>(model_.parameters(), model_.gradients(), optimizer_, phases);
    return inside;
  }

 private:
  M& model_;
  O& optimizer_;
  dist::Local local_;
};

}  // namespace sinew::bench
