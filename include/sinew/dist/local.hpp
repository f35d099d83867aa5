// sinew/dist/local.hpp: one process, no communication: the optimizer applies the local gradient.
//
// Determinism: a run repeats bit for bit with the same seeds and the same number of threads (and so does a run
// resumed from a checkpoint, tests/io/test_checkpoint.cpp). With another thread count the backend may split
// its reductions (a convolution's weight gradient) differently, so results differ in the last bits.
#pragma once

#include <span>
#include <string_view>

#include "sinew/core/diagnostics.hpp"
#include "sinew/dist/strategy_spec.hpp"

namespace sinew::dist {

/// One process: the gradients are the local ones, and the update is the optimizer's step.
struct Local {
  /// for reports and checkpoints
  static constexpr std::string_view kName = "local";

  /// Nothing to set (one process); here so that every strategy is built the same way: S(S::options{...}).
  struct options {};

  Local() = default;
  /// As Local(); every strategy is built as S(S::options{...}).
  explicit Local(options) {}

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
  /// Nothing to start (Strategy contract).
  void start(std::span<float>, O&) {}

  template <SyncModePolicy M, OptimizerPolicy O>
  /// Applies the optimizer to the local gradients, timed as the update phase (Strategy contract).
  void update(std::span<float> params, std::span<float> grads, O& optimizer, metrics::PhaseSeconds& phases) {
    metrics::Stopwatch watch;
    optimizer.step(params, grads);
    phases.update += watch.elapsed();
  }

  /// Nothing to synchronise: one rank's running statistics are the only ones (the buffer hook of
  /// dist/strategy_spec.hpp).
  void synchronize_buffers(std::span<float>) noexcept {}

  /// The sum over one worker is its own floats: SyncBatchNorm2d computes what BatchNorm2d does (the cross-worker
  /// sum of dist/strategy_spec.hpp).
  void sum_over_workers(std::span<float>) noexcept {}
};

template <>
struct Local::mode<Sync> {};

static_assert(StrategyPolicy<Local> && req::has_buffer_sync<Local> && req::has_sum_over_workers<Local>);

}  // namespace sinew::dist
