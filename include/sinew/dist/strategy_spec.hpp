// sinew/dist/strategy_spec.hpp: what a distribution strategy must provide.
//
// Contract. A strategy S decides how the gradients of all workers become one update of the parameters.
// The trainer owns the model and the optimizer; the strategy owns everything that crosses processes.
//   S::kName                        "local", "ring_allreduce", ... for reports.
//   S::template mode<M>             instantiable only for a sync mode M that S supports; for any other the
//                                   primary template fails with a sentence (the trainer instantiates it).
//   s.rank(), s.world_size()        this process and the number of processes;
//   s.is_worker()                   whether this process trains (parameter-server servers do not);
//   s.workers(), s.worker_index()   the number of training processes and this one's index among them
//                                   (for sharding data);
//   s.template start<M>(params, o)  once before training: makes every worker start from the same parameters
//                                   (rank 0's) and checks that all agree on the configuration;
//   s.template update<M>(params, grads, optimizer, phases)
//                                   after backward: combines gradients as M says and updates params, adding
//                                   the exposed and hidden communication and the update time to phases
//                                   (phases.load, forward and backward are the trainer's: left as they are).
// Optional: s.all_agree(bool) -> bool, true when the flag holds on every rank; the trainer asks it before
// acting on a NaN loss so that all ranks stop together (none waits in a collective). The all-reduce strategies
// make it a collective; dist::ParameterServer, whose servers do not train, sends a false to its servers, which
// tell every other worker at its next exchange (see parameter_server.hpp).
// Optional, the same agreement without a wait of its own (req::has_deferred_agreement):
//   s.agree_during_update(ok)       collective, after forward and before this step's update(): starts the
//                                   agreement on `ok`, which travels with the step's gradients; update() then
//                                   applies the optimizer step only if `ok` held on every rank, and otherwise
//                                   changes no parameter and no optimizer state;
//   s.agreed() -> bool              after update(): whether it applied the step.
// The trainer prefers it to all_agree: an all_agree between forward and backward is a point where every rank
// waits for the slowest one's forward, and then again at the end of the step; deferred, the ranks meet once.
// The all-reduce strategies (and dist::Compressed) have it.
// Optional, for training on after a rank dies (req::has_elastic; the all-reduce strategies, options.elastic):
//   s.elastic() -> bool             whether the trainer goes on when one of s's operations throws rank_lost;
//   s.shrink_after_loss()           collective over the survivors: s continues on them (its communicator
//     -> std::vector<int>           shrunk, nothing in flight) and returns the ranks lost; the parameters are as
//                                   its last update() left them on this rank, wholly updated or not at all;
//   s.communicator() -> C&          the survivors' communicator, over which the trainer takes the state of the
//                                   survivor that got furthest and re-deals the data (trainer.hpp).
// Optional, for strategies with ranks that do not train (dist::ParameterServer):
//   s.template serve<M>(params, phases) -> std::size_t
//                                   on a rank with is_worker() false, Trainer::train_epoch calls this instead of
//                                   training: it serves the workers' epoch and returns its optimizer steps;
//   s.template finish_epoch<M>(params, phases)
//                                   on a worker, after its epoch's last step (the end of epoch for the servers).
// Optional, for preemption (Trainer::set_preemption) in the middle of a serving strategy's epoch
// (req::has_preemption_relay; dist::ParameterServer in Sync):
//   S::template kRelaysPreemption<M>  whether it relays in mode M (otherwise the trainer preempts between epochs);
//   s.request_preemption(bool)      on a worker, before update(): whether this rank caught a preemption signal;
//                                   the flag travels with the step's gradients;
//   s.preempting() -> bool          after update() on every worker, and after serve() on the servers: whether
//                                   some worker requested it in that step, the same on every rank. The workers
//                                   then end their epoch there (finish_epoch) and every rank saves.
// Optional, for checkpoints (io/checkpoint.hpp) of strategies that keep state of their own
// (req::has_checkpoint_state):
//   s.checkpoint_state(params) -> NamedState
//                                   views of what the strategy keeps between steps (core/named_state.hpp), each
//                                   name with its own prefix: dist::ParameterServer's shard of `params`, its
//                                   optimizer's buffers and steps and its range as keys ("shard.*");
//                                   dist::Compressed's compressor state ("compressor.residual" ...). The trainer
//                                   saves it in this rank's file; a resume writes the tensors in place;
//   s.restore_checkpoint_state(state)  after a resume wrote them, with the saved counts: applies the counts.
//   S::kOptimizerOnServers          true where the strategy's servers keep the optimizer's state (a parameter
//                                   server): the trainer's own optimizer then holds none and is not saved.
// A strategy with s.communicator() and several ranks saves and loads collectively over it (broadcast, sum).
//
// Optional, for models with buffers (req::has_buffer_sync): BatchNorm's running mean and variance are not
// parameters (no gradient reaches them), so without this hook each rank's drift apart and evaluation depends
// on the rank that evaluates.
//   s.synchronize_buffers(buffers)  collective over every rank, servers included: `buffers` is the model's
//                                   flat array of running statistics (Model::buffers(), one span, no copy);
//                                   afterwards it holds the same floats, bit for bit, on every worker. The
//                                   trainer calls it at the end of every train_epoch (after finish_epoch or
//                                   serve), on every rank, when the network has buffers; so evaluate(), which
//                                   is not collective, sees statistics every rank shares once an epoch (or
//                                   train_steps) returned, and a checkpoint saved between epochs holds them.
// sinew's strategies average the workers' statistics (the running mean and the running variance, each the
// mean over the workers): dist::RingAllReduce and dist::MpiAllReduce over their all-reduce, dist::ParameterServer
// over every rank with the servers adding nothing, dist::Local has nothing to do. Averaging rather than
// PyTorch DDP's choice (broadcast_buffers=True copies rank 0's buffers to every rank at the start of each
// forward, so every other rank's statistics are thrown away): the running statistics are exponential moving
// averages, linear in the batch statistics, so the mean of the ranks' averages is the moving average of the
// mean batch statistics, which uses every rank's data (the statistics a single process would have gathered
// over the global batch, less the spread between the ranks' batch means in the variance); and averaging once
// an epoch equals averaging every step up to rounding, so the statistics need not cross the wire each step.
// Between two synchronisations (inside an epoch, from the step callback) each rank holds its own statistics.
//
// Optional, for networks whose layers take statistics over every worker (SyncBatchNorm2d, layers/batch_norm.hpp;
// req::has_sum_over_workers):
//   s.sum_over_workers(data)        collective over the workers, blocking: `data` (a few floats per channel)
//                                   becomes its element-wise sum over every worker. The trainer hands it to the
//                                   model, whose SyncBatchNorm2d layers call it once in each training-mode
//                                   forward and once in each backward, so inside backward, between the overlap
//                                   hooks: it must not mix with gradient messages in flight (its own tag, or a
//                                   collective that the ranks call in the same order as the buckets' ones).
// dist::RingAllReduce sums with its ring on a tag of its own, dist::MpiAllReduce with the communicator's
// all-reduce (every rank starts the same buckets before the same layer, so MPI sees its collectives in one order),
// dist::Local returns `data` as it is (one worker: SyncBatchNorm2d is BatchNorm2d). A trainer whose network holds
// a SyncBatchNorm2d refuses at compile time a strategy without it: dist::ParameterServer has none (its workers
// never meet in a collective; its servers would have to carry every layer's statistics twice a step).
//
// Optional, for a timeline (metrics/timeline.hpp): s.set_timeline(metrics::Timeline*) hands the strategy the
// trainer's timeline (null: none); it records its communication there (the all-reduce strategies: each bucket's
// all-reduce, the wait and the update). Without it the timeline holds the trainer's events only.
//
// Optional overlap hooks (req::has_overlap_hooks: all three or none). The trainer uses them when present, so
// that communication runs while backward still computes:
//   s.set_layer_starts(starts)      once, before start(): ascending offsets in the flat gradient buffer where
//                                   each layer with parameters begins (Model::layer_starts()); later layers lie
//                                   at larger offsets. S may cut buckets on them (and agree on them in start()).
//   s.backward_begins(grads)        every training step, before backward: `grads` (the model's gradients()) is
//                                   about to be overwritten; nothing in it is final.
//   s.gradients_ready(first)        during backward, after a layer wrote its gradients: grads[first, end) are
//                                   final for this step and may be sent. Calls come with decreasing `first`, at
//                                   most one per layer; layers backward does not reach send none, so update()
//                                   must treat the rest of grads as final when it comes.
// update() then waits only for what is still in flight, and leaves the mean gradient in grads as before, so
// the optimizer sees what it saw without the hooks. The hooks run on the training thread inside backward:
// update() adds the time spent in them to phases.comm, and the trainer, which times its calls to them, leaves
// it out of phases.backward. phases.comm_hidden is the time communication was in flight while backward computed.
// Each side writes only its own phases: a strategy adds to comm, comm_hidden and update, the trainer sets load,
// forward and backward, and adds to comm the time of its NaN check (with several ranks an agreement, whose wait
// for a slower rank is communication); neither rewrites the other's numbers.
// dist::example::counting_hooks below is the smallest strategy with hooks.
//
// Optional, for strategies that treat parameter tensors one by one (dist::Compressed; req::has_tensor_layout_hook):
// s.set_tensor_layout(t), which the trainer calls once, before start(), with each tensor's offset and shape
// (nets/tensor_layout.hpp).
//
// Optional, for strategies that read the ranks' gradients where they lie (req::has_gradient_storage):
// s.gradient_storage(floats) -> std::span<float>, collective, which the trainer calls once, after start(), with
// the model's gradient span: memory for the gradients (zeroed, 64-byte aligned, alive as long as the strategy),
// where the model then keeps them (Model::use_gradient_storage), or empty: the model keeps its own.
// dist::RingAllReduce gives its shared window within a host, so that its ranks sum from each other's gradients.
//
// Optional, for one process (dist::Local; req::has_in_backward_update): s.in_backward_update() ->
// InBackwardUpdate::update_fn (core/in_backward_update.hpp), after start(): an update of the parameters [from, to)
// from their gradients alone, which the Trainer installs in the model for the ops that can run it inside backward
// (empty: none), and s.in_backward_seconds(), the time it took in the last backward: update() adds it to
// phases.update, the Trainer takes it out of phases.backward, and update() updates the rest.
//
// Optional, for reports: s.bytes_sent() -> std::uint64_t, the bytes of gradients this rank has sent since it
// was built (the all-reduce strategies: what the ring sends; dist::Compressed: its payloads).
//
// Optional, for every strategy: a nested `options` type (S(S::options{...}, comm) builds it; dist::Local's is
// empty); s.require_agreement(facts, who, counted) for the trainer's agreement (see trainer.hpp); and
// S::mode<M>::kUnevenEpochs, true when workers may take uneven numbers of steps in an epoch.
//
// Extending a strategy. The trainer names the strategy as a type and calls its members directly (nothing is
// virtual), so a strategy is extended by deriving from it and defining the member to extend, which calls the
// base's: the derived class is the policy the trainer gets. Inherit the constructors (using S::S), keep the
// base's kName and mode<M> (or define them anew), and call the base from each member you define, as
// dist::example::counting_updates below does for update<M>. Members that need the communicator reach it
// through s.communicator() (the all-reduce strategies and ParameterServer have it).
#pragma once

#include <concepts>
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "sinew/comm/agreement.hpp"
#include "sinew/core/in_backward_update.hpp"
#include "sinew/core/named_state.hpp"
#include "sinew/dist/sync_mode.hpp"
#include "sinew/metrics/timer.hpp"
#include "sinew/nets/tensor_layout.hpp"
#include "sinew/optim/optimizer_spec.hpp"

namespace sinew {

namespace metrics {
class Timeline;  // metrics/timeline.hpp: the timeline hook takes a pointer
}

namespace req {
template <class S>
concept has_strategy_name = requires {
  { S::kName } -> std::convertible_to<std::string_view>;
};
template <class S>
concept has_topology = requires(const S& s) {
  { s.rank() } -> std::convertible_to<int>;
  { s.world_size() } -> std::convertible_to<int>;
  { s.is_worker() } -> std::convertible_to<bool>;
  { s.workers() } -> std::convertible_to<int>;
  { s.worker_index() } -> std::convertible_to<int>;
};
template <class S>
concept has_sync_update = requires(S& s, std::span<float> p, optim::example::descent& o, metrics::PhaseSeconds& t) {
  { s.template start<Sync>(p, o) };
  { s.template update<Sync>(p, p, o, t) };
};
/// The overlap hooks of the contract above.
template <class S>
concept has_overlap_hooks = requires(S& s, std::span<const std::size_t> starts, std::span<float> g, std::size_t i) {
  { s.set_layer_starts(starts) };
  { s.backward_begins(g) };
  { s.gradients_ready(i) };
};
/// The gradient-storage hook of the contract above.
template <class S>
concept has_gradient_storage = requires(S& s, std::size_t floats) {
  { s.gradient_storage(floats) } -> std::same_as<std::span<float>>;
};
/// The deferred agreement of the contract above.
template <class S>
concept has_deferred_agreement = requires(S& s, bool ok) {
  { s.agree_during_update(ok) };
  { s.agreed() } -> std::convertible_to<bool>;
};
/// Elastic continuation of the contract above: going on without a rank that died.
template <class S>
concept has_elastic = requires(S& s) {
  { s.elastic() } -> std::convertible_to<bool>;
  { s.shrink_after_loss() } -> std::same_as<std::vector<int>>;
  { s.communicator().size() } -> std::same_as<int>;
};
/// The buffer hook of the contract above: averages the model's running statistics over the workers.
template <class S>
concept has_buffer_sync = requires(S& s, std::span<float> buffers) {
  { s.synchronize_buffers(buffers) };
};
/// The update inside backward of the contract above.
template <class S>
concept has_in_backward_update = requires(const S& s) {
  { s.in_backward_update() } -> std::convertible_to<InBackwardUpdate::update_fn>;
  { s.in_backward_seconds() } -> std::convertible_to<double>;
};
/// The cross-worker sum of the contract above (SyncBatchNorm2d's statistics).
template <class S>
concept has_sum_over_workers = requires(S& s, std::span<float> data) {
  { s.sum_over_workers(data) };
};
/// The NaN check's agreement that waits (all_agree) of the contract above.
template <class S>
concept has_all_agree = requires(S& s, bool ok) {
  { s.all_agree(ok) } -> std::convertible_to<bool>;
};
/// The trainer's agreement (require_agreement), and its form that lets a rank take part uncompared.
/// @{
template <class S>
concept has_agreement = requires(S& s, std::span<const comm::Fact> facts) { s.require_agreement(facts, "trainer"); };
template <class S>
concept has_counted_agreement =
    requires(S& s, std::span<const comm::Fact> facts) { s.require_agreement(facts, "trainer", true); };
/// @}
/// The preemption relay of the contract above.
template <class S>
concept has_preemption_relay = requires(S& s, bool mine) {
  s.request_preemption(mine);
  { s.preempting() } -> std::convertible_to<bool>;
};
/// Ranks that serve rather than train (serve and finish_epoch of the contract above).
template <class S, class M>
concept has_serving = requires(S& s, std::span<float> p, metrics::PhaseSeconds& t) {
  { s.template serve<M>(p, t) } -> std::convertible_to<std::size_t>;
  { s.template finish_epoch<M>(p, t) };
};
/// The timeline hook of the contract above.
template <class S>
concept has_timeline_hook = requires(S& s, metrics::Timeline* t) { s.set_timeline(t); };
/// A communicator the trainer may use for its own collectives (checkpoints, traces, the host's cores).
template <class S>
concept has_communicator = requires(S& s) { s.communicator(); };
/// The checkpoint hook of the contract above.
template <class S>
concept has_checkpoint_state = requires(S& s, std::span<float> p, const NamedState& state) {
  { s.checkpoint_state(p) } -> std::same_as<NamedState>;
  { s.restore_checkpoint_state(state) };
};
/// The tensor-layout hook of the contract above.
template <class S>
concept has_tensor_layout_hook = requires(S& s, std::span<const dist::ParamTensor> tensors) {
  { s.set_tensor_layout(tensors) };
};
/// Whether M lets workers take uneven numbers of steps in an epoch (S::mode<M>::kUnevenEpochs).
template <class S, class M>
concept has_uneven_epochs = requires { requires bool(S::template mode<M>::kUnevenEpochs); };
}  // namespace req

/// A distribution strategy policy (the Trainer's third slot).
template <class S>
concept StrategyPolicy = req::has_strategy_name<S> && req::has_topology<S> && req::has_sync_update<S>;

namespace dist::example {
/// The smallest strategy: one process, the required members only; update() applies the local gradient.
struct one_process {
  static constexpr std::string_view kName = "one_process";
  template <class M>
  struct mode;  // Sync only, below

  int rank() const { return 0; }
  int world_size() const { return 1; }
  bool is_worker() const { return true; }
  int workers() const { return 1; }
  int worker_index() const { return 0; }
  template <SyncModePolicy M, class O>
  void start(std::span<float>, O&) {}
  template <SyncModePolicy M, class O>
  void update(std::span<float> params, std::span<float> grads, O& optimizer, metrics::PhaseSeconds&) {
    optimizer.step(params, grads);
  }
};
template <>
struct one_process::mode<Sync> {};
static_assert(StrategyPolicy<one_process>);

/// One process that watches backward through the overlap hooks (a real strategy would send each finished
/// range of gradients there).
struct counting_hooks : one_process {
  static constexpr std::string_view kName = "counting_hooks";

  void set_layer_starts(std::span<const std::size_t> starts) { layers = int(starts.size()); }
  void backward_begins(std::span<float>) { ready = 0, lowest = std::size_t(-1); }
  void gradients_ready(std::size_t first) { ++ready, lowest = first < lowest ? first : lowest; }

  int layers = 0, ready = 0;  ///< layers with parameters; layers whose gradients were final in the last backward
  std::size_t lowest = std::size_t(-1);  ///< the smallest `first` reported in the last backward
};
static_assert(StrategyPolicy<counting_hooks> && req::has_overlap_hooks<counting_hooks>);

/// A strategy extended as described above: S, counting the updates it made.
template <StrategyPolicy S>
struct counting_updates : S {
  using S::S;
  template <SyncModePolicy M, class O>
  void update(std::span<float> params, std::span<float> grads, O& optimizer, metrics::PhaseSeconds& phases) {
    S::template update<M>(params, grads, optimizer, phases);
    ++updates;
  }
  std::size_t updates = 0;
};
static_assert(StrategyPolicy<counting_updates<counting_hooks>>);
}  // namespace dist::example

}  // namespace sinew
