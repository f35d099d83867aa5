// bench/support/train_step.hpp: backward and the optimizer's update of a benchmark's training step, as
// Trainer<Net, B> runs them with dist::Local({.update_in_backward = true}): the update inside backward where an op
// can run it (OneDnn's large fully connected layers, backend/onednn/fused_dense_update.hpp), the rest after it.
#pragma once

#include "sinew/sinew.hpp"

namespace sinew::bench {

/// Binds a dist::Local with the update inside backward to `model` and `optimizer` (which must outlive it).
template <class M, class O>
class local_step {
 public:
  local_step(M& model, O& optimizer) : model_(model), optimizer_(optimizer) {
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
  dist::Local local_{dist::Local::options{.update_in_backward = true}};
};

}  // namespace sinew::bench
