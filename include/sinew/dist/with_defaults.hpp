// sinew/dist/with_defaults.hpp: a strategy with every optional member of dist/strategy_spec.hpp filled in.
//
// The trainer holds its strategy S as with_defaults<S> and calls every member directly: where S has the
// member (each optional member is a named req:: piece of strategy_spec.hpp) it is S's; where it has not, the
// default here says what a strategy without it means (no overlap, no agreement, nothing to save ...). The
// defaults live in this one place, as ensmallen's Function<> fills in an objective's missing methods; the
// constants say which optional parts S has, where the trainer's behaviour (not only a call) differs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include "sinew/comm/agreement.hpp"
#include "sinew/comm/communicator_spec.hpp"
#include "sinew/core/affinity.hpp"
#include "sinew/core/named_state.hpp"
#include "sinew/dist/strategy_spec.hpp"
#include "sinew/dist/sync_mode.hpp"
#include "sinew/io/checkpoint.hpp"
#include "sinew/metrics/timeline.hpp"
#include "sinew/metrics/timer.hpp"
#include "sinew/nets/tensor_layout.hpp"

namespace sinew::dist {

/// S, for sync mode M, with the optional members of the strategy contract defaulted.
template <StrategyPolicy S, SyncModePolicy M>
class with_defaults {
 public:
  /// S has the overlap hooks: backward reports each layer's gradients as they are final.
  static constexpr bool kOverlaps = req::has_overlap_hooks<S>;
  /// The NaN check travels with the gradients (agree_during_update / agreed).
  static constexpr bool kDeferredAgreement = req::has_deferred_agreement<S>;
  /// The ranks check the trainer's type and batches (require_agreement).
  static constexpr bool kAgrees = req::has_agreement<S>;
  /// Some ranks serve rather than train (a parameter server): they save only between epochs.
  static constexpr bool kServes = req::has_serving<S, M>;
  /// The servers keep the optimizer's state: the trainer's optimizer holds none (and is not saved).
  static constexpr bool kOptimizerOnServers = [] {
    if constexpr (requires { S::kOptimizerOnServers; })
      return bool(S::kOptimizerOnServers);
    else
      return false;
  }();
  /// S sums floats over its workers (sum_over_workers), as SyncBatchNorm2d needs.
  static constexpr bool kSumsOverWorkers = req::has_sum_over_workers<S>;
  /// S can go on without a rank that died (req::has_elastic), if its options ask.
  static constexpr bool kElastic = req::has_elastic<S>;
  /// Workers may take uneven numbers of steps in an epoch under M.
  static constexpr bool kUnevenEpochs = req::has_uneven_epochs<S, M>;
  /// The servers relay a preemption within a step under M (req::has_preemption_relay): it stops mid-epoch.
  static constexpr bool kRelaysPreemption = [] {
    if constexpr (req::has_preemption_relay<S>)
      return bool(S::template kRelaysPreemption<M>);
    else
      return false;
  }();

  /// Takes over the strategy.
  explicit with_defaults(S strategy) : s_(std::move(strategy)) {}

  /// The strategy itself.
  /// @{
  S& get() noexcept { return s_; }
  const S& get() const noexcept { return s_; }
  /// @}

  /// How the ranks on this host share its cores (one rank alone without a communicator that knows).
  static HostShare host_share(S& s) {
    if constexpr (requires { { s.communicator().host_share() } -> std::convertible_to<HostShare>; })
      return s.communicator().host_share();
    else
      return {};
  }

  /// The required members, S's.
  /// @{
  int rank() const { return s_.rank(); }
  int world_size() const { return s_.world_size(); }
  bool is_worker() const { return s_.is_worker(); }
  int workers() const { return s_.workers(); }
  int worker_index() const { return s_.worker_index(); }
  template <class O>
  void start(std::span<float> params, O& optimizer) {
    s_.template start<M>(params, optimizer);
  }
  template <class O>
  void update(std::span<float> params, std::span<float> grads, O& optimizer, metrics::PhaseSeconds& phases) {
    s_.template update<M>(params, grads, optimizer, phases);
  }
  /// @}

  /// The overlap hooks; without them backward runs without reporting.
  /// @{
  void set_layer_starts(std::span<const std::size_t> starts) {
    if constexpr (kOverlaps) s_.set_layer_starts(starts);
  }
  void backward_begins(std::span<float> grads) {
    if constexpr (kOverlaps) s_.backward_begins(grads);
  }
  void gradients_ready(std::size_t first) {
    if constexpr (kOverlaps) s_.gradients_ready(first);
  }
  /// @}
  /// Memory for the model's gradients that the strategy reads where it lies; empty: the model keeps its own.
  std::span<float> gradient_storage(std::size_t floats) {
    if constexpr (req::has_gradient_storage<S>)
      return s_.gradient_storage(floats);
    else
      return (void)floats, std::span<float>{};
  }
  /// The tensor shapes, for strategies that treat tensors one by one.
  void set_tensor_layout(std::span<const ParamTensor> tensors) {
    if constexpr (req::has_tensor_layout_hook<S>) s_.set_tensor_layout(tensors);
  }

  /// The trainer's agreement; `counted` false lets a rank that does not train take part uncompared. Without
  /// it, nothing is checked.
  void require_agreement(std::span<const comm::Fact> facts, std::string_view who, bool counted = true) {
    if constexpr (req::has_counted_agreement<S>)
      s_.require_agreement(facts, who, counted);
    else if constexpr (kAgrees)
      s_.require_agreement(facts, who);
  }
  /// The NaN check's agreement: `ok` on every rank (one process: `ok`).
  bool all_agree(bool ok) {
    if constexpr (req::has_all_agree<S>)
      return s_.all_agree(ok);
    else
      return ok;
  }
  /// The preemption relay (kRelaysPreemption); without it, nothing is requested and nothing relayed.
  /// @{
  void request_preemption(bool mine) {
    if constexpr (kRelaysPreemption) s_.request_preemption(mine);
  }
  bool preempting() const {
    if constexpr (kRelaysPreemption)
      return s_.preempting();
    else
      return false;
  }
  /// @}
  /// Whether the trainer goes on when a rank dies (kElastic and S's options.elastic).
  bool elastic() const {
    if constexpr (kElastic)
      return s_.elastic();
    else
      return false;
  }
  /// The deferred agreement (kDeferredAgreement); without it, every step is applied.
  /// @{
  void agree_during_update(bool ok) {
    if constexpr (kDeferredAgreement) s_.agree_during_update(ok);
  }
  bool agreed() {
    if constexpr (kDeferredAgreement)
      return s_.agreed();
    else
      return true;
  }
  /// @}

  /// On a rank that serves (kServes): serves the workers' epoch, returning its optimizer steps.
  std::size_t serve(std::span<float> params, metrics::PhaseSeconds& phases) {
    if constexpr (kServes)
      return s_.template serve<M>(params, phases);
    else
      return 0;
  }
  /// On a worker, after its epoch's last step.
  void finish_epoch(std::span<float> params, metrics::PhaseSeconds& phases) {
    if constexpr (kServes) s_.template finish_epoch<M>(params, phases);
  }
  /// The end-of-epoch buffer hook; without it each rank keeps its own statistics.
  void synchronize_buffers(std::span<float> buffers) {
    if constexpr (req::has_buffer_sync<S>) s_.synchronize_buffers(buffers);
  }

  /// The cross-worker sum (kSumsOverWorkers); without it, one worker's floats are their own sum (the trainer
  /// refuses a network that needs it from a strategy without it).
  void sum_over_workers(std::span<float> data) {
    if constexpr (kSumsOverWorkers) s_.sum_over_workers(data);
  }

  /// Hands S the timeline where it records its communication; without the hook, S records nothing.
  void set_timeline(metrics::Timeline* timeline) {
    if constexpr (req::has_timeline_hook<S>) s_.set_timeline(timeline);
  }
  /// The offset of this rank's clock from rank 0's and its uncertainty, in ns (0, 0 on one rank).
  std::pair<std::int64_t, std::int64_t> clock_offset() {
    if constexpr (req::has_communicator<S>)
      if (s_.world_size() > 1) return metrics::estimate_clock_offset(s_.communicator());
    return {0, 0};
  }
  /// Writes the timelines of every rank (rank 0 gathers) or of this one to `path`.
  void write_trace(const metrics::Timeline& timeline, const metrics::TraceNames& names, const std::string& path) {
    if constexpr (req::has_communicator<S>)
      if (s_.world_size() > 1) return metrics::write_trace(s_.communicator(), timeline, names, path);
    metrics::write_trace(timeline, names, path);
  }

  /// How the ranks act together while saving and loading a checkpoint (one rank alone without a communicator).
  io::CheckpointGroup checkpoint_group() {
    if constexpr (req::has_communicator<S>)
      if (s_.world_size() > 1) return io::group_of(s_.communicator());
    return {};
  }
  /// The strategy's own state for a checkpoint, and its restore; without the hook, nothing.
  /// @{
  NamedState checkpoint_state(std::span<float> params) {
    if constexpr (req::has_checkpoint_state<S>)
      return s_.checkpoint_state(params);
    else
      return {};
  }
  void restore_checkpoint_state(const NamedState& state) {
    if constexpr (req::has_checkpoint_state<S>) s_.restore_checkpoint_state(state);
  }
  /// @}

 private:
  S s_;
};

}  // namespace sinew::dist
