// sinew/trainer.hpp: the training loop, with every design choice a policy.
//
//   #include <sinew/trainer.hpp>
//   #include <sinew/backend/onednn.hpp>  // the backend's own header: this one parses neither oneDNN nor Eigen
//
//   using Train = sinew::Trainer<sinew::nets::LeNet5<>,        // the network, a type
//                                sinew::backend::OneDnn,        // operator library
//                                sinew::dist::Local,            // how gradients are combined
//                                sinew::Sync,                   // how workers wait for each other
//                                sinew::optim::Sgd>;            // the update rule
//   Train trainer({.threads = 2}, {.lr = 0.05f, .momentum = 0.9f});
//   auto stats = trainer.train_epoch(loader);
//
// Each step is timed in phases (load, forward, backward, exposed communication, update; communication hidden
// behind backward is reported beside them); images/s counts only steps after the warm-up. A NaN or infinite
// loss stops training with a training_error before the step changes any parameter (with several ranks, every
// rank stops together: the ranks agree on it, beside the step's gradients where the strategy can carry it). On a
// rank that does not train (a parameter server) train_epoch serves the workers' epoch instead.
//
// A strategy with overlap hooks (dist/strategy_spec.hpp) hears from backward as each layer's gradients are
// final. dist::Local({.update_in_backward = true}) has the model's large fully connected layers apply the update
// inside backward (dist/local.hpp); the learning rate of the step is set before its backward. A strategy with
// require_agreement checks at construction that every rank built the same trainer, and at each epoch that every
// rank has the same batch size and number of batches: a mismatch is an error naming the rank, not a hang. (A
// parameter server's servers take part without a loader of their own, and its Async and BoundedStaleness modes
// allow workers uneven numbers of batches: mode<M>::kUnevenEpochs.)
//
// BatchNorm statistics: at the end of every epoch the strategy's buffer hook (dist/strategy_spec.hpp) makes the
// running statistics the same on every worker (the all-reduce strategies and the parameter server average
// them), so every rank evaluates alike after train_epoch or train_steps returned; evaluate() is not collective.
//
// Steps, not only epochs: train_epoch(loader, max_steps) ends the epoch after max_steps steps (every rank must
// pass the same), and train_steps(loader, n) trains n steps over as many epochs as that takes. A per-step
// callback (set_step_callback) sees each step's loss and phases as it ends; it may throw to stop training.
// start_trace() and write_trace(path) record every rank's steps as a Chrome trace (metrics/timeline.hpp).
//
// Gradient accumulation (TrainerOptions::accumulate = k): a step is one update over k of the loader's batches
// (micro-batches), each run forward and backward on its own; their gradients are summed here and the update
// applies their mean over every image of the k (each micro-batch weighted by its images), which is the
// gradient of one batch of k x B images. The strategy sees one backward per step: the first k - 1 run without
// its overlap hooks, and the last one's hooks hand it each layer's gradients with the sum folded in, so its
// buckets still overlap that backward. An epoch of N batches takes ceil(N / k) steps (max_steps counts steps);
// when k does not divide N, the last step takes the N mod k batches left. BatchNorm normalises each
// micro-batch by its own statistics and updates its running statistics once per micro-batch, as PyTorch does.
// The NaN check agrees once per step, on whether any micro-batch's loss was not finite. A step's StepInfo
// and phases count all its micro-batches.
//
// Checkpoints (io/checkpoint.hpp): save_checkpoint(dir) on every rank, between epochs or (all-reduce and
// Local) from the step callback in the middle of one, writes the run
// (parameters, BatchNorm statistics, optimizer state, step and epoch, the loader's batch size and shuffle seed,
// the dropout step, a parameter server's shards) so that resume(dir) on a new trainer of the same type, seed
// and number of ranks continues it: a Sync run resumed ends bit for bit where the run that was not stopped
// ends (the same train_epoch / train_steps calls). Saved mid-epoch, the next train_epoch trains the rest of
// that epoch (its max_steps counts from the epoch's first step), passing over the batches already trained.
// On another number of ranks (after a rank died) resume continues the run too: data re-dealt, shards re-read
// by the servers' new ranks, step count continuing; what cannot carry over it returns as a sentence.
// A checkpoint of another configuration is refused with a sentence naming what differs.
//
// Preemption (set_preemption, core/preemption.hpp): on SIGTERM or SIGUSR1 (configurable) caught by any rank,
// every rank finishes its current step, the ranks agree on it (a one-float all-reduce at points every rank
// reaches alike: after each step with the all-reduce strategies and Local, at the start of every epoch, and at
// the end of each epoch with a parameter server; in its Sync mode the servers relay it within the step, with
// the gradients, so it stops mid-epoch too), save the run into the directory given and throw
// sinew::preempted, which main turns into exit status 75 (EX_TEMPFAIL).
//
// A Trainer of more than one rank holds a comm::unwinding_guard (comm/failure.hpp): if an exception takes it
// down, this rank ends the whole job when it exits, instead of leaving the others waiting for it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sinew/backend/backend_spec.hpp"
#include "sinew/comm/agreement.hpp"
#include "sinew/comm/failure.hpp"
#include "sinew/core/affinity.hpp"
#include "sinew/core/cross_worker.hpp"
#include "sinew/core/elementwise.hpp"
#include "sinew/core/error.hpp"
#include "sinew/core/parallel.hpp"
#include "sinew/core/preemption.hpp"
#include "sinew/data/cached_loader.hpp"
#include "sinew/data/loader_spec.hpp"
#include "sinew/dist/buckets.hpp"
#include "sinew/dist/local.hpp"
#include "sinew/dist/strategy_spec.hpp"
#include "sinew/dist/sync_mode.hpp"
#include "sinew/dist/with_defaults.hpp"
#include "sinew/nets/tensor_layout.hpp"
#include "sinew/io/checkpoint.hpp"
#include "sinew/io/run_state.hpp"
#include "sinew/metrics/profile.hpp"
#include "sinew/metrics/timeline.hpp"
#include "sinew/metrics/timer.hpp"
#include "sinew/model.hpp"
#include "sinew/nets/network_spec.hpp"
#include "sinew/optim/optimizer_spec.hpp"
#include "sinew/optim/sgd.hpp"
#include "sinew/tensor/buffer.hpp"

namespace sinew {

/// How a Trainer runs (the second and third constructor arguments are the optimizer's and the strategy's).
struct TrainerOptions {
  int threads = 0;            ///< compute threads; 0 = one per core of this rank's share (see cores)
  /// How the ranks that share a host split its cores (core/affinity.hpp): by default each takes an equal,
  /// disjoint share and, when several share the host, binds a thread to each of its cores. Never more threads
  /// than cores unless `threads` asks for them.
  CoreSplit cores = {};
  std::uint64_t seed = 0;     ///< parameter initialisation and dropout masks
  int warmup_steps = 10;      ///< steps left out of images/s
  bool check_finite = true;   ///< stop on a NaN or infinite loss
  /// Gradient accumulation (DDP's no_sync, Horovod's backward_passes_per_step): the loader's batches (micro-
  /// batches) per update, at least 1. Each runs forward and backward; one update (one all-reduce, one push to
  /// the servers) applies the mean gradient over all their images. A step is an update (see the file comment).
  int accumulate = 1;
};

/// What one epoch of training did.
struct EpochStats {
  /// the epoch's index (0 for the first)
  int epoch = 0;
  /// training steps and samples of this rank in the epoch
  /// @{
  std::size_t steps = 0, samples = 0;
  /// @}
  double loss = 0;          ///< mean training loss over the epoch's samples
  double accuracy = 0;      ///< fraction of training samples classified right (during the epoch)
  double seconds = 0;       ///< wall time of the epoch
  double images_per_second = 0;  ///< this process, steps after the warm-up only
  metrics::PhaseSeconds phases;  ///< summed over the epoch's steps
};

/// What one training step did, for Trainer::set_step_callback.
struct StepInfo {
  /// the epoch it belongs to
  int epoch = 0;
  std::size_t step = 0;           ///< steps before this one in the epoch
  std::int64_t steps_done = 0;    ///< steps of this trainer so far, this one included
  std::size_t samples = 0;        ///< of this rank in this step
  double loss = 0;                ///< this rank's mean loss over the step's samples
  metrics::PhaseSeconds phases;   ///< this step's
  std::size_t epoch_steps = 0;    ///< steps this epoch will take (the loader's batches, or fewer when told)
};

/// What an evaluation pass measured.
struct EvalStats {
  /// samples evaluated
  std::size_t samples = 0;
  /// mean loss and accuracy (fraction classified right, 0 to 1) over the samples; wall time of the pass
  /// @{
  double loss = 0, accuracy = 0, seconds = 0;
  /// @}
};

/// What an elastic trainer did when ranks died (the strategy's options.elastic; Trainer::recoveries()).
struct Recovery {
  std::vector<int> lost;   ///< the ranks that died, numbered as before they did
  int workers = 0;         ///< the ranks training on
  int rank = 0;            ///< this rank's number among them
  std::int64_t step = 0;   ///< steps done when training went on: the furthest any survivor had completed
  int epoch = 0;           ///< the epoch whose rest was re-dealt
  std::size_t from_sample = 0;  ///< the position of that epoch's permutation the rest was dealt from
  std::chrono::system_clock::time_point noticed{};  ///< when this rank saw the loss (wall clock)
  double seconds = 0;      ///< from then until training went on (shrinking, agreeing, taking the state)
};

/// Net, B, S, M, O, L: the policies (see the *_spec.hpp of each). Profile: metrics::NoProfile (free) or
/// metrics::OperatorProfile for per-operator times (model().profile()), with the optimizer step as the
/// kind weights_update (the strategy's update phase).
template <NetworkPolicy Net, BackendPolicy B, StrategyPolicy S = dist::Local, SyncModePolicy M = Sync, OptimizerPolicy O = optim::Sgd,
          data::LoaderPolicy L = data::CachedLoader, class Profile = metrics::NoProfile>
class Trainer {
  // A strategy that cannot run mode M stops the build here with its own sentence.
  static_assert(sizeof(typename S::template mode<M>) > 0);
  static_assert(!Model<Net, B, Profile>::kSumsOverWorkers || req::has_sum_over_workers<S>,
                "this network has a SyncBatchNorm2d, whose statistics are summed over every worker each step, and the "
                "strategy has no sum_over_workers (dist::ParameterServer has none): use dist::RingAllReduce or "
                "dist::MpiAllReduce, or BatchNorm2d (its running statistics are averaged once an epoch)");

 public:
  /// The policies and shapes it was built from.
  /// @{
  using model_type = Model<Net, B, Profile>;
  using network = Net;
  using backend = B;
  using strategy = S;
  using sync_mode = M;
  using optimizer_type = O;
  using loader_type = L;
  /// S with the optional members of dist/strategy_spec.hpp defaulted (dist/with_defaults.hpp).
  using strategy_type = dist::with_defaults<S, M>;
  using input_shape = typename Net::input_shape;
  /// @}
  /// Learning rate at a step, from the base rate: see optim/schedule.hpp.
  using schedule_fn = std::function<float(float base_lr, std::int64_t step)>;
  /// Called after every training step (see set_step_callback).
  using step_callback = std::function<void(const StepInfo&)>;
  /// The most events a training step records in a timeline (start_trace): each node's forward and backward, an
  /// overlap hook and a bucket per node with parameters at most, the step's phases, and an update for each
  /// piece of the parameters an all-reduce strategy updates at a time (dist::kUpdatePieceFloats; a bucket's
  /// last piece may be short). With TrainerOptions::accumulate = k, each micro-batch records its own load,
  /// forward, backward and nodes: up to k times as many.
  static constexpr std::size_t kTraceEventsPerStep = 2 * model_type::kOps + 3 * model_type::kLayerStarts.size() +
                                                     model_type::kParamSpan / dist::kUpdatePieceFloats + 10;
  /// train_epoch's default: the loader's whole epoch.
  static constexpr std::size_t kWholeEpoch = std::numeric_limits<std::size_t>::max();

  /// Builds the model (initialised from options.seed), the optimizer from its options, and starts the
  /// strategy. With several ranks: collective, and every rank must build the same trainer (checked).
  explicit Trainer(TrainerOptions options = {}, typename O::options optimizer = {}, S strategy = {})
      : options_(checked(options)),
        // The ranks on this host that share its CPU set (the strategy's communicator knows them) split its cores.
        cores_(plan_and_confine(strategy_type::host_share(strategy), options.cores, options.threads)),
        ctx_(BackendOptions{.threads = cores_.threads(),
                            .cpus = cores_.bind ? cores_.compute : std::vector<int>{}}),
        // A parameter server's server never runs the network: parameters only, no gradient buffer.
        model_(ctx_, ModelOptions{.seed = options.seed, .gradients = strategy.is_worker()}),
        // Under a parameter server the servers build each shard's optimizer (its state lives there): this one
        // only supplies the learning rate, so it holds no state, on workers and servers alike.
        optimizer_(optimizer, strategy_type::kOptimizerOnServers ? 0 : model_.parameters().size()),
        strategy_(std::move(strategy)),
        base_lr_(optimizer_.learning_rate()) {
    strategy_.set_layer_starts(model_type::layer_starts());
    // SyncBatchNorm2d's statistics cross the workers through the strategy (the trainer is not movable: its
    // model points at its context).
    if constexpr (model_type::kSumsOverWorkers)
      model_.set_sum_over_workers(CrossWorkerSum([this](std::span<float> data) { strategy_.sum_over_workers(data); }));
    // Only for strategies that ask (dist::Compressed): its walk over the state dict costs every other program
    // compile time for nothing.
    if constexpr (req::has_tensor_layout_hook<S>) strategy_.set_tensor_layout(dist::tensor_layout<Net>());
    strategy_.start(model_.parameters(), optimizer_);
    // dist::Local's update inside backward (its options.update_in_backward), for the model's ops that can run it.
    if constexpr (req::has_in_backward_update<S>)
      model_.set_in_backward_update(strategy_.get().in_backward_update());
    {
      // Ranks that built other trainers would exchange spans of other sizes in other orders, or wait forever.
      std::string type = std::string(B::kName) + " " + std::string(S::kName) + " " + std::string(M::kName) + " " +
                         std::string(O::kName) + " " + to_string<input_shape>();
      for (const std::string& node : model_type::node_names()) type += " " + node;
      // Ranks that accumulated over other numbers of batches would meet in other all-reduces.
      const comm::Fact facts[] = {
          {"trainer type (backend, strategy, sync mode, optimizer, network)", comm::fingerprint(type), true},
          {"batches per update (TrainerOptions::accumulate)", std::uint64_t(options_.accumulate)}};
      strategy_.require_agreement(facts, "trainer");
    }
    // A strategy that reads the ranks' gradients where they lie (a ring's shared window) gives the memory for
    // them (strategy_spec.hpp): the model keeps them there. Collective, after the agreement on the model.
    if (const std::span<float> storage = strategy_.gradient_storage(model_type::kParamSpan); !storage.empty())
      model_.use_gradient_storage(storage);
    if constexpr (!data::req::has_redeal<L>)
      if (strategy_.elastic())
        throw error("trainer: the strategy's options.elastic re-deals the data over the ranks left after one dies, "
                    "which this loader type cannot (data/loader_spec.hpp: req::has_redeal; data::CachedLoader can)");
    // Only now: ranks that disagreed above all throw alike and need not abort the job.
    if (strategy_.world_size() > 1) guard_ = std::make_unique<comm::unwinding_guard>(strategy_.rank());
  }

  /// The model: parameters, forward for inference, the profile.
  model_type& model() noexcept { return model_; }
  /// With the strategy's options.elastic: each time ranks died and this one trained on without them.
  const std::vector<Recovery>& recoveries() const noexcept { return recoveries_; }
  /// The optimizer.
  O& optimizer() noexcept { return optimizer_; }
  /// The strategy: rank(), workers(), worker_index() ...
  S& dist() noexcept { return strategy_.get(); }
  /// This rank's cores: how many threads compute, on which cores, bound or not (describe() says it in a line).
  const CorePlan& cores() const noexcept { return cores_; }
  /// The backend's context: threads().
  typename B::context& context() noexcept { return ctx_; }
  /// Training steps taken so far (the schedule's step).
  std::int64_t steps_done() const noexcept { return step_; }
  /// Epochs trained (or served) so far: the epoch the next train_epoch trains.
  int epochs_done() const noexcept { return epoch_; }

  /// Sets the learning-rate schedule (default: the optimizer's rate throughout).
  void set_schedule(schedule_fn schedule) { schedule_ = std::move(schedule); }

  /// Calls `callback` after every training step with what the step did, in place of every callback set or added
  /// before (an empty function: none). An exception it throws leaves train_epoch as one from the loader would
  /// (with several ranks, ending the job), and the callbacks after it are not called for that step.
  void set_step_callback(step_callback callback) {
    step_callbacks_.clear();
    add_step_callback(std::move(callback));
  }
  /// Calls `callback` after every training step too, after the callbacks set or added before it (a progress
  /// line and a program's own checkpointing each keep their callback). An empty function adds nothing.
  void add_step_callback(step_callback callback) {
    if (callback) step_callbacks_.push_back(std::move(callback));
  }

  /// Collective (every rank, a parameter server's servers too): from now on, a signal of preemption.signals
  /// caught on any rank (one is enough) stops training on every rank at the next point they all reach (see
  /// the file comment): the current step ends, the run is saved into preemption.directory (as save_checkpoint
  /// does: every rank must see it) and every rank throws sinew::preempted, whose exit_status() (75) main
  /// returns; resume(directory) continues the run. A signal that comes while the run saves changes nothing.
  /// A signal during evaluate() is acted on at the next train_epoch's start. An empty directory turns it off
  /// and puts the signals' previous handlers back. Ranks that disagree on whether it is on throw comm_error.
  void set_preemption(Preemption preemption) {
    const bool on = !preemption.directory.empty();
    // Ranks that disagreed would meet other ranks' all-reduces with their own: an error, not a hang.
    const comm::Fact facts[] = {{"preemption (set_preemption with a directory)", std::uint64_t(on)}};
    strategy_.require_agreement(facts, "trainer");
    preemption_watch_.reset();
    preempt_ = nullptr;
    if (on) {
      preemption_watch_ = std::make_unique<preemption_watch>(preemption.signals);
      // Bound here rather than called from the training loop, so that a program that never calls
      // set_preemption compiles no checkpoint writing into its loop (it cost the README's program 4 s).
      preempt_ = [this](int caught) { preempt(caught); };
    }
    preemption_dir_ = std::move(preemption.directory);
  }

  /// Collective (with several ranks, servers included): starts recording a timeline of the training steps,
  /// room for `capacity` events reserved now (metrics/timeline.hpp: what is recorded, the clock alignment this
  /// call does, the cost). Tracing is off until it is called; calling it again starts a new timeline.
  void start_trace(std::size_t capacity = metrics::Timeline::kDefaultCapacity) {
    timeline_ = std::make_unique<metrics::Timeline>(capacity);
    if (strategy_.world_size() > 1) {
      const auto [offset, uncertainty] = strategy_.clock_offset();
      timeline_->set_clock_offset(offset, uncertainty);
    }
    model_.set_timeline(timeline_.get());
    strategy_.set_timeline(timeline_.get());
  }
  /// The timeline start_trace() records into (null before).
  const metrics::Timeline* timeline() const noexcept { return timeline_.get(); }
  /// Collective like start_trace(): writes every rank's events since start_trace() to `path` as a Chrome trace
  /// (rank 0 gathers and writes; Perfetto or chrome://tracing open it). Recording goes on.
  void write_trace(const std::string& path) {
    if (!timeline_)
      throw error("trainer: write_trace(" + path + ") before start_trace(): nothing was recorded (call "
                  "start_trace() before training)");
    strategy_.write_trace(*timeline_, {model_type::node_names(), std::string(S::kName)}, path);
  }

  /// Images per second of this process over every step after the warm-up so far.
  double images_per_second() const { return timed_seconds_ > 0 ? double(timed_images_) / timed_seconds_ : 0; }

  /// One pass over the loader's epoch `epoch_` (counted by the trainer), updating the parameters; with
  /// max_steps, the epoch ends after that many steps (updates, each of TrainerOptions::accumulate batches;
  /// every rank must pass the same), counted from the epoch's first step (after a resume mid-epoch, those the
  /// saved run trained count too).
  EpochStats train_epoch(L& loader, std::size_t max_steps = kWholeEpoch) {
    try {
      return train_epoch_steps(loader, max_steps);
    } catch (const std::exception& e) {
      epoch_batch_ = 0;  // a train_epoch after an exception starts the epoch anew
      in_epoch_ = false;
      // Kept for the message that ends the job, should this exception take the trainer down (comm/failure.hpp).
      if (guard_) comm::note_exception(e.what());
      throw;
    }
  }

  /// On a parameter server's server (dist().is_worker() false): serves the workers' epoch, as train_epoch(loader)
  /// does there, without a loader. A server reads no data, so a program need build no loader (nor data set) on
  /// it: it calls serve_epoch() as often as the workers call train_epoch. Collective like train_epoch; throws
  /// sinew::error on a rank that trains.
  EpochStats serve_epoch() {
    static_assert(strategy_type::kServes, "Trainer::serve_epoch() is for the servers of a parameter server (dist::ParameterServer); "
                           "with this strategy every rank trains: call train_epoch(loader)");
    if (strategy_.is_worker())
      throw error("trainer: serve_epoch() on rank " + std::to_string(strategy_.rank()) +
                  ", a worker of the parameter server: workers train with train_epoch(loader); only servers serve");
    try {
      // The workers' agreement on their batches, which a server joins without being compared.
      const comm::Fact facts[] = {{"local batch size", 0}, {"number of batches in this epoch", 0}};
      strategy_.require_agreement(std::span<const comm::Fact>(facts, kUnevenEpochs ? 1 : 2), "trainer", false);
      preempt_if_signalled();  // as the workers do at their epoch's start
      EpochStats stats;
      stats.epoch = epoch_;
      return serve_epoch(stats);
    } catch (const std::exception& e) {
      if (guard_) comm::note_exception(e.what());
      throw;
    }
  }

  /// Trains `steps` steps: whole epochs, then the first steps of one more (each epoch begins anew, as with
  /// train_epoch). Returns the stats of the epochs (or first parts) it trained. Epochs are counted by the
  /// loader's batches_per_epoch() (an epoch is ceil(batches / accumulate) steps), so every rank (a parameter
  /// server's servers too, with the loader they pass) calls train_epoch equally often when their loaders
  /// promise as many batches.
  std::vector<EpochStats> train_steps(L& loader, std::size_t steps) {
    std::vector<EpochStats> epochs;
    const std::size_t per_epoch = steps_in(loader.batches_per_epoch());
    for (; steps > 0 && per_epoch > 0; steps -= std::min(steps, per_epoch))
      epochs.push_back(train_epoch(loader, std::min(steps, per_epoch)));
    return epochs;
  }

  /// "Trainer<LeNet5<Input<1, 32, 32>>, OneDnn, RingAllReduce<Mpi>, Sync, Sgd>": how checkpoints name it.
  static std::string type_name() {
    io::RunState run;
    run.type = type_parts();
    return run.type_name();
  }

  /// Collective: every rank (a parameter server's servers too) calls it between epochs, or every rank from the
  /// step callback at the same step (not with a parameter server, whose servers serve). The step callback runs
  /// after a step's update, so with TrainerOptions::accumulate no checkpoint holds a partial sum of gradients:
  /// a resume needs the same accumulate (refused with a sentence otherwise). Writes the run into
  /// `dir` (created if missing; every rank must see it) as a new checkpoint that replaces the one there only
  /// once it is complete (io/checkpoint.hpp). Throws on every rank if any rank could not write.
  void save_checkpoint(const std::filesystem::path& dir) {
    require_optimizer_state();
    if constexpr (strategy_type::kServes)
      if (in_epoch_ && !strategy_.preempting())
        throw error("trainer: " + std::string(S::kName) + " checkpoints are saved between epochs, not from a step "
                    "callback: its servers are serving the epoch and cannot write their shards until it ends");
    io::save_run<Net>(dir, strategy_.checkpoint_group(), run_state());
  }

  /// Collective, on a trainer built as the one that saved (same type and TrainerOptions::seed): continues the
  /// run saved in `dir`. Every file is checked before anything changes, so a refused resume (another
  /// configuration: the sentence names what differs; a truncated or corrupt file: it names the file) leaves the
  /// trainer as it was. The next train_epoch trains the saved epoch, and refuses a loader with another batch
  /// size or shuffle seed than the saved run's (on as many ranks, another number of batches too).
  ///
  /// On another number of ranks (a rank died; or more machines): the step and epoch counts continue; worker i
  /// takes the BatchNorm statistics, dropout step and optimizer state of saved worker i mod (saved workers)
  /// (an all-reduce keeps the optimizer's state the same on every rank; BatchNorm statistics are each rank's
  /// own running averages, so a new rank starts from a saved rank's); a parameter server's server s reads
  /// saved server s's shard (the number of servers is part of the strategy's type, so the shards are the same
  /// ranges) whatever its rank now. The loaders' position is the number of samples of the epoch's permutation
  /// already dealt (batches x batch size x workers): the new workers continue from the same sample when that
  /// is a whole number of their steps; otherwise the rest of the saved epoch is not trained and training
  /// continues at the start of the next.
  /// Returns what did not carry over exactly, as a sentence (empty when the run continues as saved).
  std::string resume(const std::filesystem::path& dir) {
    require_optimizer_state();
    io::RunState run = run_state();
    std::string note = io::load_run<Net>(dir, strategy_.checkpoint_group(), run);
    // load_run wrote the parameters, buffers and every section's tensors; the counters are applied here.
    model_.set_step(run.model_step);
    if constexpr (req::has_state<O>)
      if (const NamedState* state = run.section("optimizer.")) optimizer_.set_steps(std::int64_t(state->count("steps")));
    if (const NamedState* state = run.section("")) strategy_.restore_checkpoint_state(*state);
    epoch_ = int(run.epoch);
    epoch_batch_ = std::size_t(run.batches_done);
    step_ = std::int64_t(run.step);
    resumed_loader_ = run.loader;
    loader_seen_ = run.loader;
    return note;
  }

 private:
  EpochStats train_epoch_steps(L& loader, std::size_t max_steps) {
    check_shape(loader);
    check_resumed_loader(loader);
    // The batches this epoch trains: max_steps updates of `accumulate` batches each, or the loader's epoch.
    const std::size_t k = std::size_t(options_.accumulate), per_epoch = loader.batches_per_epoch();
    std::size_t batches = max_steps >= steps_in(per_epoch) ? per_epoch : max_steps * k;
    {
      // A rank with another batch size would average its gradient with wrong weights; one with more batches
      // would wait forever in an all-reduce the others never start. A rank that does not train (a parameter
      // server) takes part without being compared.
      const comm::Fact facts[] = {{"local batch size", std::uint64_t(loader.batch_size())},
                                  {"number of batches in this epoch", std::uint64_t(batches)}};
      strategy_.require_agreement(std::span<const comm::Fact>(facts, kUnevenEpochs ? 1 : 2), "trainer",
                                  strategy_.is_worker());
    }
    preempt_if_signalled();  // a signal between epochs (during evaluate) or before the first step
    EpochStats stats;
    stats.epoch = epoch_;
    if (!strategy_.is_worker()) return serve_epoch(stats);
    loader.start_epoch(epoch_);
    ensure_buffers(loader.batch_size());
    if (k > 1 && accumulated_.size() != model_type::kParamSpan)
      accumulated_ = AlignedBuffer<float>(model_type::kParamSpan);
    // Resumed from a checkpoint saved mid-epoch: the batches the saved run trained are read and passed over.
    for (std::size_t b = 0; b < epoch_batch_; ++b)
      if (loader.next(images_.span(), labels_) == 0)
        throw error("trainer: the resumed run had trained " + std::to_string(epoch_batch_) + " batches of epoch " +
                    std::to_string(epoch_) + ", but this loader's epoch has only " + std::to_string(b) +
                    " (build the loader with the saved run's LoaderOptions)");
    model_.set_training(true);
    in_epoch_ = true;  // until the servers end it (finish_epoch)
    double loss_sum = 0, timed_s = 0;
    std::size_t correct = 0, timed_images = 0;
    metrics::Stopwatch epoch_watch;
    std::size_t epoch_steps = steps_in(batches);
    std::size_t epoch_step = steps_in(epoch_batch_);  // a resume continues at a step's first batch
    // Elastic (the strategy's options.elastic): where this rank's last completed step left the epoch, and its
    // correct count then, for going on from there when a rank dies in the next (go_on_without).
    [[maybe_unused]] std::size_t completed_batch = epoch_batch_, completed_correct = 0;
    for (;;) try {
    while (epoch_batch_ < batches) {
      completed_batch = epoch_batch_, completed_correct = correct;
      if (strategy_.elastic()) {
        // What this step's forward changes besides the parameters, for going back to the last completed step.
        elastic_buffers_.assign(model_.buffers().begin(), model_.buffers().end());
        elastic_model_step_ = model_.step();
      }
      // One step: `group` micro-batches (the last step of an epoch may have fewer than k), one update.
      const std::size_t group = std::min(k, batches - epoch_batch_);
      metrics::PhaseSeconds phases;
      metrics::Stopwatch watch;
      // A timeline (start_trace) records the phases from the laps that time them; null: nothing is recorded.
      metrics::Timeline* const trace = timeline_.get();
      if (trace) trace->set_step(step_);
      const metrics::clock::time_point step_began = watch.since();
      std::size_t n = 0, images = 0;  // the micro-batch's images, the step's
      double step_loss = 0, bad_loss = 0;
      bool finite = true;
      // Before backward: dist::Local may update inside it.
      optimizer_.set_learning_rate(schedule_ ? schedule_(base_lr_, step_) : base_lr_);
      for (std::size_t micro = 0; micro < group; ++micro) {
        const metrics::clock::time_point loading = watch.since();
        n = loader.next(images_.span(), labels_);
        phases.load += watch.lap();
        if (n == 0 && micro == 0) break;
        if (n == 0)
          throw error("trainer: the loader's epoch " + std::to_string(epoch_) + " ended after " +
                      std::to_string(epoch_batch_) + " batches, though its batches_per_epoch() is " +
                      std::to_string(per_epoch) + " (a loader must give the batches it promises)");
        if (trace) trace->record(metrics::TraceKind::load, loading, watch.since());
        model_.forward({images_.data(), n * input_shape::kSize}, int(n));
        const LossValue value = model_.loss({labels_.data(), n});
        phases.forward += metrics::lap(watch, trace, metrics::TraceKind::forward);
        step_loss += value.loss * double(n);
        correct += value.correct;
        images += n;
        if (finite && !std::isfinite(value.loss)) finite = false, bad_loss = value.loss;
        ++epoch_batch_;
        if (micro + 1 == group) break;  // the last one's backward is the strategy's
        // Not the step's last: its gradients join the sum, without the strategy (nothing is final yet).
        model_.backward();
        add_to_sum(n, micro == 0);
        phases.backward += metrics::lap(watch, trace, metrics::TraceKind::backward);
      }
      if (images == 0) break;
      const bool accumulated = images > n;  // earlier micro-batches wait in the sum
      const double loss = finite ? step_loss / double(images) : bad_loss;
      // The NaN check agrees across ranks (an all-reduce of one flag), once per step: its wait for slower ranks
      // is exposed communication, not backward. A strategy that can carry it beside the gradients (deferred
      // agreement) only starts it here, and its update() applies the step only if every rank's loss was finite.
      double checked = 0;
      if (options_.check_finite) {
        if constexpr (strategy_type::kDeferredAgreement)
          strategy_.agree_during_update(finite);
        else
          check_finite(loss, epoch_step);
        checked = metrics::lap(watch, trace, metrics::TraceKind::loss_check);
      }
      // Folding the sum into the last micro-batch's gradients is backward's work; the strategy's hooks are not.
      folded_end_ = model_type::kParamSpan;
      if constexpr (req::has_overlap_hooks<S>) {
        // The strategy sends each layer's gradients while backward computes the earlier layers'. The time in
        // its hooks is communication, which the strategy reports (phases.comm): backward leaves it out.
        strategy_.backward_begins(model_.gradients());
        double hooks = 0;
        model_.backward([this, &hooks, trace, accumulated, n, images](std::size_t first) {
          if (accumulated) fold_sum(first, n, images);
          metrics::Stopwatch hook;
          strategy_.gradients_ready(first);
          hooks += metrics::lap(hook, trace, metrics::TraceKind::overlap_hook);
        });
        // Layers backward does not reach sent nothing: update() takes the rest of the gradients as final.
        if (accumulated) fold_sum(0, n, images);
        phases.backward += std::max(0.0, metrics::lap(watch, trace, metrics::TraceKind::backward) - hooks);
      } else {
        // dist::Local updates inside this backward where it can, unless earlier micro-batches wait in the sum.
        model_.backward_updating(!accumulated);
        if (accumulated) fold_sum(0, n, images);
        phases.backward += metrics::lap(watch, trace, metrics::TraceKind::backward) - in_backward_seconds();
      }
      // The update inside backward is in the profile's backward of the layers that ran it (before update() ends it).
      [[maybe_unused]] const double updated_in_backward = in_backward_seconds();
      // A parameter server in Sync carries the request with this step's gradients (strategy_spec.hpp).
      if constexpr (strategy_type::kRelaysPreemption)
        if (preemption_watch_) strategy_.request_preemption(pending_preemption_signal() != 0);
      const metrics::clock::time_point updating = metrics::mark(trace);
      strategy_.update(model_.parameters(), model_.gradients(), optimizer_, phases);
      completed_batch = epoch_batch_;
      if (options_.check_finite && !strategy_.agreed()) stop_on_nonfinite(loss, epoch_step);
      phases.comm += checked;
      metrics::record(trace, metrics::TraceKind::strategy_update, updating);
      metrics::record(trace, metrics::TraceKind::step, step_began);
      if constexpr (Profile::kEnabled)
        if (model_.profile().records(true))
          model_.profile().add(metrics::OpKind::weights_update, phases.update - updated_in_backward);

      const double step_s = phases.total();
      loss_sum += step_loss;
      stats.samples += images;
      stats.phases += phases;
      ++stats.steps;
      if (step_ >= options_.warmup_steps) {
        timed_s += step_s;
        timed_images += images;
      }
      ++step_;
      if (!step_callbacks_.empty()) {
        const StepInfo info{epoch_, epoch_step, step_, images, loss, phases, epoch_steps};
        for (const step_callback& callback : step_callbacks_) callback(info);
      }
      ++epoch_step;
      // Every rank ends each step here (a parameter server's servers do not: they serve until the epoch ends).
      if constexpr (!strategy_type::kServes) preempt_if_signalled();
      if (strategy_.preempting()) break;  // relayed by the servers to every worker after this same step
    }
    break;
    } catch (const rank_lost& lost) {
      if constexpr (strategy_type::kElastic && data::req::has_redeal<L>) {
        if (!strategy_.elastic()) throw;
        if (epoch_batch_ != completed_batch) {  // interrupted before its update: back to the last completed step
          std::copy(elastic_buffers_.begin(), elastic_buffers_.end(), model_.buffers().begin());
          model_.set_step(elastic_model_step_);
        }
        epoch_batch_ = completed_batch;
        correct = completed_correct;
        batches = go_on_without(lost, loader);
        epoch_steps = steps_in(batches);
        epoch_step = steps_in(epoch_batch_);
      } else {
        throw;
      }
    }
    // A parameter server's worker ends the epoch with the servers' final parameters.
    strategy_.finish_epoch(model_.parameters(), stats.phases);
    in_epoch_ = false;
    // Preempted mid-epoch (the servers' epoch ends with it): saved as it stands, the epoch to be finished.
    if (strategy_.preempting()) preempt_(pending_preemption_signal());
    synchronize_buffers();
    stats.seconds = epoch_watch.elapsed();
    if (stats.samples > 0) {
      stats.loss = loss_sum / double(stats.samples);
      stats.accuracy = double(correct) / double(stats.samples);
    }
    timed_seconds_ += timed_s;
    timed_images_ += timed_images;
    stats.images_per_second = timed_s > 0 ? double(timed_images) / timed_s
                                          : (stats.seconds > 0 ? double(stats.samples) / stats.seconds : 0);
    ++epoch_;
    epoch_batch_ = 0;
    redealt_at_ = redealt_batch_ = 0;
    if constexpr (strategy_type::kServes) preempt_if_signalled();  // the servers do so in serve_epoch
    return stats;
  }

 public:
  /// Loss and accuracy over one pass of `loader` in evaluation mode (running statistics, no dropout), without
  /// changing the parameters or the buffers. A rank that does not train (a parameter server, whose model is
  /// current only in its shard) evaluates nothing: 0 samples.
  EvalStats evaluate(L& loader) {
    check_shape(loader);
    if (!strategy_.is_worker()) return {};
    loader.start_epoch(0);
    ensure_buffers(loader.batch_size());
    model_.set_training(false);
    EvalStats stats;
    metrics::Stopwatch watch;
    double loss_sum = 0;
    std::size_t correct = 0;
    while (const std::size_t n = loader.next(images_.span(), labels_)) {
      model_.forward({images_.data(), n * input_shape::kSize}, int(n));
      const LossValue value = model_.loss({labels_.data(), n});
      loss_sum += value.loss * double(n);
      correct += value.correct;
      stats.samples += n;
    }
    stats.seconds = watch.elapsed();
    if (stats.samples > 0) {
      stats.loss = loss_sum / double(stats.samples);
      stats.accuracy = double(correct) / double(stats.samples);
    }
    return stats;
  }

 private:
  /// On a rank that does not train (a parameter server): serves the workers' steps of this epoch; the stats
  /// count no samples, `steps` the server's optimizer steps.
  EpochStats serve_epoch(EpochStats stats) {
    metrics::Stopwatch watch;
    ++epoch_;
    for (;;) try {
      stats.steps = strategy_.serve(model_.parameters(), stats.phases);
      break;
    } catch (const rank_lost& lost) {  // elastic: a worker died; serve the rest of the epoch to the others
      if constexpr (strategy_type::kElastic) {
        if (!strategy_.elastic()) throw;
        const int was = strategy_.rank(), before = strategy_.world_size();
        --epoch_;  // the workers' epoch, as the survivors agree on it
        Recovery r = rejoin_survivors();
        ++epoch_;
        note_recovery(std::move(r), lost, was, before);
      } else {
        throw;
      }
    }
    epoch_batch_ = 0;  // a server resumed mid-epoch has served the epoch's rest
    if (strategy_.preempting()) {  // the workers stopped mid-epoch: their epoch, and this one, go on after a resume
      --epoch_;
      preempt_(pending_preemption_signal());
    }
    synchronize_buffers();
    stats.seconds = watch.elapsed();
    preempt_if_signalled();  // as the workers do at their epoch's end
    return stats;
  }

  /// With set_preemption on, collective at points every rank reaches alike, as many times: if any rank caught
  /// a preemption signal, every rank saves the run and throws sinew::preempted. The agreement is one all-reduce
  /// of one float per point; ranks at other steps cannot meet in it, since every rank passes the same points.
  void preempt_if_signalled() {
    if (!preemption_watch_) return;
    const int caught = pending_preemption_signal();
    if (on_any_rank(caught != 0)) preempt_(caught);
  }
  /// Every rank, together: saves the run and throws sinew::preempted (`caught`: this rank's signal, or 0).
  [[noreturn]] void preempt(int caught) {
    save_checkpoint(preemption_dir_);
    take_preemption_signal();  // one that came while saving too: the run is saved
    preemption_watch_->keep();  // nor may one end the process while it unwinds and exits with its status
    const std::string by = caught != 0 ? signal_name(caught) + " (caught on rank " +
                                             std::to_string(strategy_.rank()) + ")"
                                       : "a signal caught on another rank";
    // Every rank throws this alike, after the save: no rank is left waiting, so no guard ends the job.
    comm::note_leaving_together();
    // (A parameter server's server takes no steps: its count is the last checkpoint's.)
    const std::string step = strategy_.is_worker() ? ", step " + std::to_string(step_) : "";
    throw preempted("trainer: preempted by " + by + " at epoch " + std::to_string(epoch_) + step +
                    "; the run is saved in " + preemption_dir_.string() +
                    " (resume(\"" + preemption_dir_.string() + "\") on the same configuration continues it)");
  }

  /// Collective: whether `mine` holds on some rank. Between steps, through the strategy's all_agree where it has
  /// one (the all-reduce strategies: their watchdog names a rank that never comes); else (a parameter server,
  /// whose all_agree stops its servers, or one rank) a sum over every rank, servers included.
  bool on_any_rank(bool mine) {
    if constexpr (!strategy_type::kServes && req::has_all_agree<S>)
      return !strategy_.all_agree(!mine);
    else
      return strategy_.checkpoint_group().count_failures(mine) > 0;
  }

  /// At the end of every epoch, on every rank: the strategy makes the BatchNorm statistics the same on every
  /// worker (the buffer hook of dist/strategy_spec.hpp), so evaluate() and checkpoints see shared ones.
  void synchronize_buffers() {
    if constexpr (model_type::kBufferSpan > 0 && req::has_buffer_sync<S>)
      strategy_.synchronize_buffers(model_.buffers());
  }

  // Whether the workers may take other numbers of batches in an epoch (a parameter server in Async mode).
  static constexpr bool kUnevenEpochs = strategy_type::kUnevenEpochs;

  /// Stops on a NaN or infinite loss, before the step changes any parameter. With several processes all
  /// ranks learn of it together (a strategy's all_agree), so none is left waiting in a collective; with a
  /// parameter server the others learn of it from the servers, at their next step.
  /// Seconds the strategy's update inside the last backward took (0 without one).
  double in_backward_seconds() const noexcept {
    if constexpr (req::has_in_backward_update<S>)
      return strategy_.get().in_backward_seconds();
    else
      return 0;
  }
  void check_finite(double loss, std::size_t step) {
    const bool finite = std::isfinite(loss);
    const bool everywhere = strategy_.all_agree(finite);
    if (!everywhere) stop_on_nonfinite(loss, step);
  }
  /// Some rank's loss was NaN or infinite: the training_error that says whose and what to do.
  [[noreturn]] void stop_on_nonfinite(double loss, std::size_t step) const {
    const bool finite = std::isfinite(loss);
    const std::string where = " at epoch " + std::to_string(epoch_) + ", step " + std::to_string(step) +
                              " (learning rate " + std::to_string(optimizer_.learning_rate()) +
                              "); the parameters are those before this step. Lower the learning rate, or check "
                              "the data for NaN or unnormalised values";
    if (!finite)
      throw training_error("trainer: the loss is " + std::string(std::isnan(loss) ? "NaN" : "infinite") + where);
    throw training_error("trainer: another rank's loss is NaN or infinite" + where);
  }

  void check_shape(const L& loader) const {
    const int c = loader.channels(), h = loader.height(), w = loader.width();
    if (c == input_shape::kChannels && h == input_shape::kHeight && w == input_shape::kWidth) return;
    // The fix that fits: padding only grows an image, resizing also shrinks it, channels are the network's.
    const char* fix =
        c != input_shape::kChannels
            ? "give the network an Input with the loader's channels, or read the data with the network's"
        : h > input_shape::kHeight || w > input_shape::kWidth
            ? "shrink the images with LoaderOptions::resize_to_height/width (an ImageFolder also takes "
              "ImageFolderOptions::height/width), or change the network's Input"
            : "pad with LoaderOptions::pad_to_height/width, resize with resize_to_height/width, or change the "
              "network's Input";
    throw shape_error("trainer: the loader produces " + std::to_string(c) + "x" + std::to_string(h) + "x" +
                      std::to_string(w) + " images but the network takes " + to_string<input_shape>() + " (" + fix +
                      ")");
  }

  // ---- checkpoints: the run as an io::RunState (io/checkpoint.hpp writes and reads it) ----

  static void require_optimizer_state() {
    static_assert(req::has_state<O>,
                  "a checkpoint saves and restores the optimizer's state, and this optimizer does not expose it: "
                  "give it state() -> optim::StateView and set_steps(n) (optim/optimizer_spec.hpp), as Sgd, Adam "
                  "and RmsProp have");
  }

  static std::vector<std::pair<std::string, std::string>> type_parts() {
    return {{"network", io::type_part_name<Net>()},
            {"backend", io::type_part_name<B>()},
            {"strategy", io::type_part_name<S>()},
            {"sync_mode", io::type_part_name<M>()},
            {"optimizer", io::type_part_name<O>()}};
  }

  /// This rank's run, with views of the model's, the optimizer's and the strategy's state.
  io::RunState run_state() {
    io::RunState run;
    run.type = type_parts();
    // What must match for a network's parameters to mean the same: input, lowered nodes, sizes.
    run.network_layout = to_string<input_shape>();
    for (const std::string& node : model_type::layout_names()) run.network_layout += " " + node;
    run.network_layout += " params=" + std::to_string(model_type::kParamSpan) +
                          " buffers=" + std::to_string(model_type::kBufferSpan);
    run.seed = options_.seed;
    run.accumulate = std::uint64_t(options_.accumulate);
    if (redealt_at_ != 0 && epoch_batch_ > 0)
      throw error("trainer: a checkpoint cannot be saved in the middle of epoch " + std::to_string(epoch_) +
                  ": its rest was re-dealt over the ranks left after one died, which a checkpoint's position (batches "
                  "of the epoch) cannot say; save at the epoch's end");
    run.step = std::uint64_t(step_), run.epoch = std::uint64_t(epoch_), run.batches_done = epoch_batch_;
    run.loader = loader_seen_;
    run.ranks = {strategy_.rank(), strategy_.world_size(), strategy_.workers()};
    run.parameters = model_.parameters(), run.buffers = model_.buffers();
    run.model_step = model_.step();
    if constexpr (!strategy_type::kOptimizerOnServers && req::has_state<O>) {
      const optim::StateView view = optimizer_.state();
      NamedState state;
      state.tensors = view.buffers;
      state.counts = {{"steps", std::uint64_t(view.steps)}};
      run.sections.emplace_back("optimizer.", std::move(state));
    }
    if (NamedState own = strategy_.checkpoint_state(model_.parameters()); !own.empty())
      run.sections.emplace_back("", std::move(own));
    return run;
  }

  static io::LoaderFacts facts_of(const L& loader) {
    io::LoaderFacts f{std::uint64_t(loader.batch_size()), std::uint64_t(loader.batches_per_epoch()), std::nullopt};
    if constexpr (requires { loader.shuffle_seed(); }) f.shuffle_seed = std::uint64_t(loader.shuffle_seed());
    return f;
  }

  /// Records the loader for checkpoints; after a resume, refuses one that would give other batches.
  // Elastic (the strategy's options.elastic): a rank died (rank_lost), on every survivor, servers included. The
  // strategy shrinks to the survivors; they take the state of the one that completed the most steps (a rank
  // that died mid-step may have let some survivors finish it: every elastic update is whole or nothing, so each
  // survivor's parameters are those of its own last completed step) or, under a parameter server, the servers'
  // shards. Collective over the survivors.
  Recovery rejoin_survivors() {
    Recovery r;
    r.noticed = std::chrono::system_clock::now();
    metrics::Stopwatch watch;
    r.lost = strategy_.get().shrink_after_loss();
    auto& comm = strategy_.get().communicator();
    const std::vector<std::uint64_t> steps =
        comm::gather_values(comm, strategy_.is_worker() ? std::uint64_t(step_) : std::uint64_t(0));
    const std::size_t root = std::size_t(std::max_element(steps.begin(), steps.end()) - steps.begin());
    if constexpr (requires { strategy_.get().share_shards(model_.parameters()); }) {
      strategy_.get().share_shards(model_.parameters());  // the servers hold the parameters and the optimizer
    } else {
      // Buffers (BatchNorm's running statistics) stay each rank's own, as between epochs' averages.
      comm.broadcast(model_.parameters(), int(root));
      std::int64_t optimizer_steps = 0;
      if constexpr (req::has_state<O>) {
        const optim::StateView view = optimizer_.state();
        for (const auto& [name, buffer] : view.buffers) comm.broadcast(buffer, int(root));
        optimizer_steps = view.steps;
      }
      const std::vector<std::uint64_t> optimizer_counts = comm::gather_values(comm, std::uint64_t(optimizer_steps));
      if constexpr (req::has_state<O>) optimizer_.set_steps(std::int64_t(optimizer_counts[root]));
    }
    const std::vector<std::uint64_t> counts = comm::gather_values(comm, std::uint64_t(epoch_batch_));
    step_ = std::int64_t(steps[root]);
    epoch_batch_ = std::size_t(counts[root]);
    r.workers = strategy_.workers(), r.rank = strategy_.rank(), r.step = step_, r.epoch = epoch_;
    r.seconds = watch.elapsed();
    return r;
  }

  // Prints what rejoin_survivors did, and keeps it for recoveries().
  void note_recovery(Recovery r, const rank_lost& why, int was, int before) {
    std::string names;
    for (const int dead : r.lost) names += (names.empty() ? "" : ", ") + std::to_string(dead);
    char rest[96];
    if (strategy_.is_worker())
      std::snprintf(rest, sizeof rest, "the rest of epoch %d dealt from sample %zu", r.epoch, r.from_sample);
    else
      std::snprintf(rest, sizeof rest, "serving the rest of epoch %d to %d workers", r.epoch, r.workers);
    std::fprintf(stderr, "sinew: rank %d of %d goes on as rank %d of %d: rank%s %s died (%s); from step %lld, %s, "
                 "after %.3f s\n", was, before, r.rank, strategy_.world_size(), r.lost.size() == 1 ? "" : "s",
                 names.empty() ? "?" : names.c_str(), why.what(), static_cast<long long>(r.step), rest, r.seconds);
    recoveries_.push_back(std::move(r));
  }

  // On a worker, after a rank died in its last step: the survivors rejoin, and the rest of the epoch, from the
  // first sample no completed step trained, is dealt over the workers left as a resume on fewer ranks would
  // deal it (docs/checkpoints.md). Returns the batches of the epoch to train (those done, then this rank's rest).
  std::size_t go_on_without(const rank_lost& why, L& loader) {
    const int was = strategy_.rank(), before = strategy_.world_size(), workers_before = strategy_.workers();
    Recovery r = rejoin_survivors();
    // The samples of this epoch's permutation that completed steps dealt: before the last re-deal, then
    // batch x workers per batch since.
    const std::size_t dealt = redealt_at_ + (epoch_batch_ - redealt_batch_) * std::size_t(loader.batch_size()) *
                                                std::size_t(workers_before);
    loader.redeal(strategy_.worker_index(), strategy_.workers());
    const std::size_t rest = loader.start_epoch_at(epoch_, dealt);
    redealt_at_ = dealt, redealt_batch_ = epoch_batch_;
    loader_seen_ = facts_of(loader);
    r.from_sample = dealt;
    note_recovery(std::move(r), why, was, before);
    return epoch_batch_ + rest;
  }

  void check_resumed_loader(const L& loader) {
    const io::LoaderFacts now = facts_of(loader);
    if (resumed_loader_ && strategy_.is_worker()) {
      const io::LoaderFacts& was = *resumed_loader_;
      std::string differs;
      if (was.batch_size != 0 && was.batch_size != now.batch_size)
        differs =
            "batch size " + std::to_string(was.batch_size) + ", this loader's is " + std::to_string(now.batch_size);
      else if (was.batch_size != 0 && was.batches_per_epoch != 0 && was.batches_per_epoch != now.batches_per_epoch)
        differs = std::to_string(was.batches_per_epoch) + " batches per epoch, this loader gives " +
                  std::to_string(now.batches_per_epoch);
      else if (was.shuffle_seed && now.shuffle_seed && *was.shuffle_seed != *now.shuffle_seed)
        differs = "shuffle seed " + std::to_string(*was.shuffle_seed) + ", this loader's is " +
                  std::to_string(*now.shuffle_seed);
      if (!differs.empty())
        throw error("trainer: the resumed run was saved training with " + differs +
                    " (build the loader with the saved run's LoaderOptions to continue it exactly)");
    }
    resumed_loader_.reset();
    loader_seen_ = now;
  }

  // ---- gradient accumulation (TrainerOptions::accumulate) ----

  static TrainerOptions checked(TrainerOptions options) {
    if (options.accumulate < 1)
      throw error("trainer: TrainerOptions::accumulate is " + std::to_string(options.accumulate) +
                  "; it counts the batches whose gradients make one update, so it is at least 1 (1: every batch "
                  "is an update, no accumulation)");
    return options;
  }

  /// Steps (updates) that `batches` batches make: the last one takes what is left.
  std::size_t steps_in(std::size_t batches) const {
    const std::size_t k = std::size_t(options_.accumulate);
    return batches / k + (batches % k != 0);
  }

  /// After a micro-batch of n images that is not its step's last: its gradients (a mean over its n images),
  /// weighted by n, join the sum (the step's first writes it, so nothing is left from an interrupted step).
  void add_to_sum(std::size_t n, bool first) {
    const float w = float(n);
    const float* g = model_.gradients().data();
    float* sum = accumulated_.data();
    parallel_ranges(model_type::kParamSpan, [&](std::size_t begin, std::size_t end) {
      simd::transform(begin, end, [&](auto v, std::size_t i) {
        using V = decltype(v);
        const V weighted = simd::load<V>(g + i) * w;
        simd::store(sum + i, first ? weighted : weighted + simd::load<V>(sum + i));
      });
    });
  }

  /// The step's last micro-batch (n images) wrote gradients[first, folded_end_): they become the mean over the
  /// step's `images`, (sum + n x gradients) / images, the gradient of one batch of them all.
  void fold_sum(std::size_t first, std::size_t n, std::size_t images) {
    const float w = float(n), inv = 1.0f / float(images);
    float* g = model_.gradients().data() + first;
    const float* sum = accumulated_.data() + first;
    parallel_ranges(std::max(first, folded_end_) - first, [&](std::size_t begin, std::size_t end) {
      simd::transform(begin, end, [&](auto v, std::size_t i) {
        using V = decltype(v);
        simd::store(g + i, simd::fma(simd::load<V>(g + i), V(w), simd::load<V>(sum + i)) * inv);
      });
    });
    folded_end_ = std::min(first, folded_end_);
  }

  void ensure_buffers(int batch) {
    const std::size_t floats = std::size_t(batch) * input_shape::kSize;
    if (images_.size() != floats) images_ = AlignedBuffer<float>(floats);
    labels_.resize(std::size_t(batch));
  }

  TrainerOptions options_;
  CorePlan cores_;
  typename B::context ctx_;
  model_type model_;
  O optimizer_;
  strategy_type strategy_;  // S, its optional members defaulted
  float base_lr_;
  schedule_fn schedule_;
  std::vector<step_callback> step_callbacks_;  // in the order set and added
  std::unique_ptr<comm::unwinding_guard> guard_;  // with more than one rank (see the file comment)
  std::unique_ptr<metrics::Timeline> timeline_;   // start_trace()'s; null: no trace
  std::unique_ptr<preemption_watch> preemption_watch_;  // set_preemption's signals; null: off
  std::filesystem::path preemption_dir_;
  std::function<void(int)> preempt_;  // set_preemption's preempt(caught); empty: off
  AlignedBuffer<float> images_;
  std::vector<std::int32_t> labels_;
  AlignedBuffer<float> accumulated_;  // accumulate > 1: the step's earlier micro-batches' gradients, summed
  std::size_t folded_end_ = 0;        // gradients from here on hold the step's mean (fold_sum)
  int epoch_ = 0;
  std::size_t epoch_batch_ = 0;  // batches of epoch epoch_ trained: while it runs, or resumed mid-epoch
  bool in_epoch_ = false;        // a worker between its epoch's first step and finish_epoch (the servers serve)
  std::int64_t step_ = 0;
  io::LoaderFacts loader_seen_;                     // the loader of the last train_epoch, for checkpoints
  std::optional<io::LoaderFacts> resumed_loader_;   // after resume(): what the next train_epoch's loader must match
  double timed_seconds_ = 0;
  std::size_t timed_images_ = 0;
  // Elastic: the position of epoch_'s permutation its rest was re-dealt from after a rank died (0: dealt as a
  // whole), and epoch_batch_ then; the recoveries so far.
  std::size_t redealt_at_ = 0, redealt_batch_ = 0;
  std::vector<float> elastic_buffers_;  // the model's buffers and forward count at the step's start
  std::uint64_t elastic_model_step_ = 0;
  std::vector<Recovery> recoveries_;
};

}  // namespace sinew
