// sinew/dist/local.hpp: one process, no communication: the optimizer applies the local gradient.
//
// The update inside backward (options.update_in_backward, off by default). With an optimizer that updates a range
// from its gradients alone (optim/optimizer_spec.hpp: req::has_block_step), Local hands the Trainer an update that
// the ops able to run it apply inside their backward pass, block by block, from gradients that never reach the
// gradient buffer (core/in_backward_update.hpp): OneDnn's fully connected layers of at least a million weights
// (backend/onednn/fused_dense_update.hpp). update() then updates the rest after backward. What it buys: AlexNet's
// fully connected layers move 16 bytes a parameter instead of 32; what it costs: gradients() holds no gradient for
// those layers after the step (as PyTorch's optimizer in backward keeps no .grad), and their input gradient sums
// in another order, so training differs from the update after backward in the last bits. A step whose gradients
// are summed over micro-batches (TrainerOptions::accumulate) updates after backward.
//
// Determinism: a run repeats bit for bit with the same seeds and the same number of threads (and so does a run
// resumed from a checkpoint, tests/io/test_checkpoint.cpp). With another thread count the backend may split
// its reductions (a convolution's weight gradient) differently, so results differ in the last bits.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "sinew/core/diagnostics.hpp"
#include "sinew/core/in_backward_update.hpp"
#include "sinew/dist/strategy_spec.hpp"
#include "sinew/metrics/timer.hpp"
#include "sinew/optim/optimizer_spec.hpp"

namespace sinew::dist {

/// One process: the gradients are the local ones, and the update is the optimizer's step.
struct Local {
  /// for reports and checkpoints
  static constexpr std::string_view kName = "local";

  /// Every strategy is built the same way: S(S::options{...}).
  struct options {
    /// Update the parameters of the layers that can inside their backward pass (the file comment); false: one
    /// update after backward, gradients() holding every gradient.
    bool update_in_backward = false;
  };

  Local() = default;
  /// With `o`'s options; every strategy is built as S(S::options{...}).
  explicit Local(options o) : options_(o) {}

  template <class M>
  struct mode {
    static_assert(dependent_false<M>,
                  "dist::Local runs a single process, so it has only the Sync mode; for Async or "
                  "BoundedStaleness<K> use dist::ParameterServer<Comm, Servers>");
  };

  /// The Strategy contract (dist/strategy_spec.hpp): one rank, which is the only worker.
  /// @{
  int rank() const noexcept { return 0; }
  int world_size() const noexcept { return 1; }
  bool is_worker() const noexcept { return true; }
  int workers() const noexcept { return 1; }
  int worker_index() const noexcept { return 0; }
  /// @}

  template <SyncModePolicy M, class O>
  /// With options.update_in_backward and an optimizer with req::has_block_step, binds the update inside
  /// backward to `params` and `optimizer` (Strategy contract).
  void start(std::span<float> params, O& optimizer) {
    if constexpr (req::has_block_step<O>) {
      if (!options_.update_in_backward) return;
      in_backward_ = [this, params, &optimizer](std::size_t from, std::size_t to, const float* grad) {
        metrics::Stopwatch watch;
        optimizer.step_block(params, grad, from, to);
        updated_.emplace_back(from, to);
        in_backward_seconds_ += watch.elapsed();
      };
    }
  }

  /// The update the Trainer installs in the model (Model::set_in_backward_update): empty unless start() bound one.
  InBackwardUpdate::update_fn in_backward_update() const { return in_backward_; }
  /// Seconds the update inside the last backward took: update() adds them to phases.update, and the Trainer takes
  /// them out of phases.backward.
  double in_backward_seconds() const noexcept { return in_backward_seconds_; }

  template <SyncModePolicy M, OptimizerPolicy O>
  /// Applies the optimizer to the local gradients, those of the parameters updated inside backward left out,
  /// timed with the update inside backward as the update phase (Strategy contract).
  void update(std::span<float> params, std::span<float> grads, O& optimizer, metrics::PhaseSeconds& phases) {
    metrics::Stopwatch watch;
    updated_in_backward_ = 0;
    if constexpr (req::has_range_step<O>) {
      if (!updated_.empty()) {
        // The ranges backward updated, in order; the optimizer's step_range takes the gaps between them.
        std::sort(updated_.begin(), updated_.end());
        std::size_t at = 0;
        for (const auto& [from, to] : updated_) {
          if (from > at) optimizer.step_range(params, grads, at, from);
          at = std::max(at, to);
          updated_in_backward_ += to - from;
        }
        if (at < params.size()) optimizer.step_range(params, grads, at, params.size());
        optimizer.end_step();
      } else {
        optimizer.step(params, grads);
      }
    } else {
      optimizer.step(params, grads);
    }
    phases.update += watch.elapsed() + in_backward_seconds_;
    updated_.clear();
    in_backward_seconds_ = 0;
  }

  /// The parameters the last update() found updated inside backward (0: all after it).
  std::size_t updated_in_backward() const noexcept { return updated_in_backward_; }

  /// Nothing to synchronise: one rank's running statistics are the only ones (the buffer hook of
  /// dist/strategy_spec.hpp).
  void synchronize_buffers(std::span<float>) noexcept {}

  /// The sum over one worker is its own floats: SyncBatchNorm2d computes what BatchNorm2d does (the cross-worker
  /// sum of dist/strategy_spec.hpp).
  void sum_over_workers(std::span<float>) noexcept {}

 private:
  options options_;
  InBackwardUpdate::update_fn in_backward_;              // empty: every update after backward
  std::vector<std::pair<std::size_t, std::size_t>> updated_;  // this step's ranges updated inside backward
  double in_backward_seconds_ = 0;
  std::size_t updated_in_backward_ = 0;
};

template <>
struct Local::mode<Sync> {};

static_assert(StrategyPolicy<Local> && req::has_buffer_sync<Local> && req::has_sum_over_workers<Local> &&
              req::has_in_backward_update<Local>);

}  // namespace sinew::dist
