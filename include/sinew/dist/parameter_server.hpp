// sinew/dist/parameter_server.hpp: data parallelism through parameter servers, in every sync mode.
//
//   using Strategy = sinew::dist::ParameterServer<sinew::comm::Mpi, 1>;  // the last rank serves, the others train
//   using Train    = sinew::Trainer<Net, Backend, Strategy, sinew::Async>;
//
// Roles. Of p ranks the last `Servers` are servers and ranks 0 .. p - Servers - 1 are workers, so rank 0 is a
// worker (it prints, as with the other strategies) and a worker's index is its rank. Server s holds shard s of
// the flat parameter buffer, [s n / Servers, (s + 1) n / Servers): contiguous, sizes differ by one float at most.
// The optimizer runs on the servers: each builds its own for its shard, O(o.hyper_parameters(), shard size), so
// the optimizer state (momentum, moments) lives there; a worker's optimizer only supplies the learning rate (and
// so the schedule), which travels with every gradient.
//
// Protocol: point-to-point messages of floats; every message starts with a 5-float header, some carry a shard.
//   worker -> server  {gradient, lr, version, preempt} then the gradient's shard   one step
//                     {done}                                     the worker's epoch is over
//                     {stop, worker, epoch, step}                the worker stops training; nothing follows
//                                                                (steps cross as floats: exact below 2^24)
//   server -> worker  {params, update seconds, lead, version, preempt} then the shard's parameters
//                     {stop, worker, epoch, step} then the shard's parameters: stop training
// A reply's version is the server's step count when it sent those parameters; the worker's next gradient carries
// it back, so the server knows how many updates the gradient missed (its staleness, counted in ServerCounters).
// preempt: see Checkpoints.
// A worker's step posts the receives of every server's reply first, then sends its gradient shards, then waits
// for all: a server's blocking send of a reply therefore never waits on a worker that is busy elsewhere.
//
// Modes. Sync: a server takes one message from every worker still in the epoch, in worker order, averages the
// gradients that came, steps once and replies to each with the new parameters (so N workers at local batch b
// train as one process at batch N b). Async: a server takes whichever worker's message comes first (probe_any),
// steps with that gradient alone and replies at once with its current parameters. BoundedStaleness<K>: as
// Async, but a worker's lead, the gradients it has pushed this epoch minus those of the slowest worker still in
// the epoch, never exceeds K: the server holds back the reply to a worker that would be further ahead until the
// slowest catches up. The slowest worker is never held, so this cannot deadlock.
//
// Staleness. K bounds a worker's lead, not how late its gradients are: every gradient a server applies alone is
// late by the updates other workers made while it was computed (ServerCounters::staleness counts them; at most
// (workers - 1)(2K + 1) with a bound). With one slow worker, even BoundedStaleness<0> applies about half the
// gradients one update late (the slow worker's, computed before the fast one's update of the same round), and
// so does Async, which runs the fast worker's steps in stretches with fresh parameters and leaves a few of the
// slow one's far behind: K = 0 ... 8 and Async end within their spread over seeds of each other, a few points under
// Sync with momentum 0.9, whose momentum on the servers carries each late gradient on (bench/staleness.py; the
// test of the order pins it). options::staleness_scaled_lr divides each step's learning rate by its staleness + 1
// (Zhang et al., IJCAI 2016), which closes most of that gap.
//
// Epochs. Trainer::train_epoch on a server serves one epoch (its EpochStats count 0 samples, `steps` optimizer
// steps of its shard, `phases.update` their time and `phases.comm` the rest). Each worker ends its epoch with
// {done}; a server answers every done, once all workers sent theirs, with the shard's final parameters, so all
// workers leave an epoch with the same parameters. Workers with fewer steps just leave the epoch's rounds (Sync)
// or the staleness minimum (BoundedStaleness) sooner: uneven step counts cannot hang. Every rank, server or
// worker, must call train_epoch equally often (a server left out of an epoch leaves its workers waiting).
//
// Stopping. all_agree(false) (the trainer's NaN check) sends {stop} to every server. A server that receives a
// stop replies {stop} to every other worker's next message (or the one it holds), then throws a training_error;
// a worker that is told to stop passes the stop on to the servers that did not tell it and throws too. So every
// rank ends with a training_error naming the worker whose loss was not finite, and none waits forever. A worker
// that was told to stop holds the servers' latest parameters; the strategy cannot be used after a stop.
//
// Agreement. start() checks the parameter count, optimizer, configuration text, servers and sync mode on every
// rank; through require_agreement the trainer checks its type (network, backend, optimizer, mode) on every rank
// and, at each epoch, the workers' batch size and, in Sync, their number of batches (Async and
// BoundedStaleness<K> allow uneven epochs: mode<M>::kUnevenEpochs).
//
// Watchdog (options.timeout_seconds, 0: wait forever). A server that has heard nothing for timeout_seconds from
// a worker it waits for (one it has answered and that has not ended its epoch) aborts the job naming that
// worker: a worker that hangs or is stopped ends the job within timeout_seconds of its last message. A worker
// that waits for a server's reply for timeout_seconds plus a grace (a fifth of it, 1 to 5 s) aborts the job
// naming that server; the grace lets a server that waits for a silent worker name it first. A rank that dies
// or leaves through an exception ends the job itself (Open MPI, comm/failure.hpp). The trainer's agreement
// between epochs is not watched: ranks may reach it far apart.
//
// Checkpoints (io/checkpoint.hpp): each server writes its own file, with its shard of the parameters and the
// state of the shard's optimizer (shard_state()); workers keep no optimizer state. Saved between epochs, when
// every worker holds the servers' final parameters; in Sync also mid-epoch on a preemption: a worker that
// caught the signal sets its gradient header's preempt, a server that sees it in a round sets it in every
// reply of that round, so every worker learns it after the same step, ends its epoch there
// (done) and holds the servers' latest parameters, and the servers' epoch ends with it (preempting()).
//
// Determinism: Sync is bitwise repeatable: a server sums the gradients in worker order, whatever order they
// arrive in. Async and BoundedStaleness<K> are not: the order of the updates is the order of arrival.
//
// BatchNorm statistics: the workers' running statistics are averaged at the end of every epoch, over every
// rank (synchronize_buffers), so every worker evaluates alike; the servers hold the mean too.
//
// What a server holds (under Trainer): the whole flat parameter buffer, of which only its shard stays current
// (start() copies rank 0's parameters into every rank's, and checkpoints and BatchNorm statistics are laid out
// over it); its shard's optimizer and state, and one shard of gradient (two in Sync, for the sum). No gradient
// buffer of the model's size (ModelOptions::gradients false), no activations (it never runs the network), no
// state in the trainer's own optimizer (nor on the workers: it only supplies the learning rate), and no loader:
// a server calls Trainer::serve_epoch(), so its program need build no data set on it.
//
// Counters: counters() on each rank, gather_counters() (collective) for the whole job on every rank.
//
// Timing, per worker step: the slowest server's update time (it travels in the reply) counts as `update`, the
// rest of the push and pull as exposed `comm`.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <concepts>
#include <cstdio>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "sinew/comm/agreement.hpp"
#include "sinew/comm/communicator_spec.hpp"
#include "sinew/core/elementwise.hpp"
#include "sinew/core/error.hpp"
#include "sinew/core/message_tags.hpp"
#include "sinew/core/named_state.hpp"
#include "sinew/dist/detail/allreduce_common.hpp"
#include "sinew/dist/options.hpp"
#include "sinew/dist/strategy_spec.hpp"
#include "sinew/dist/sync_mode.hpp"
#include "sinew/metrics/timer.hpp"
#include "sinew/optim/optimizer_spec.hpp"

namespace sinew::dist {

namespace detail {

/// How a rank waits for a message that may take long (a server for a worker's next gradient, seconds of
/// forward and backward; a worker for the servers' update): it polls for the first kPollSeconds, then sleeps
/// kNapSeconds between polls. A server that spun instead would take a core's worth of CPU for the whole step,
/// which the workers beside it on the host need (bench/paper/scaling.py shows the cost). A nap adds at most
/// kNapSeconds to a wait.
class patient_wait {
 public:
  static constexpr double kPollSeconds = 200e-6;  ///< poll this long first (a reply that is due soon)
  static constexpr double kNapSeconds = 100e-6;   ///< then sleep this long between polls
  /// Between two polls.
  void pause() {
    if (metrics::clock::now() - start_ < std::chrono::duration<double>(kPollSeconds))
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::duration<double>(kNapSeconds));
  }

 private:
  metrics::clock::time_point start_ = metrics::clock::now();
};

/// What a message is (the first float of its header).
enum class ps_kind : int { gradient = 1, done = 2, stop = 3, params = 4 };
using ps_header = std::array<float, 5>;

/// The bound on a worker's lead in mode M (-1: none).
template <class M>
inline constexpr int kStalenessBound = -1;
template <>
inline constexpr int kStalenessBound<Sync> = 0;
template <int K>
inline constexpr int kStalenessBound<BoundedStaleness<K>> = K;
}  // namespace detail

/// What a server saw, for reports and tests (counted since construction).
struct ServerCounters {
  std::size_t gradients = 0;     ///< gradients received and applied
  std::size_t steps = 0;         ///< optimizer steps of the shard (Sync: one per round)
  std::size_t held_replies = 0;  ///< replies held back to keep a worker within the staleness bound
  int max_lead = 0;              ///< the largest lead of a worker when its reply was sent
  /// How many gradients were applied with each staleness: the server's updates between the parameters the
  /// worker computed on and the gradient's own update. Bin i counts staleness i; the last bin, that or more.
  /// Sync: everything in bin 0.
  std::array<std::size_t, 32> staleness{};
  /// The mean staleness of the applied gradients (0 when none).
  double mean_staleness() const {
    std::size_t n = 0;
    double sum = 0;
    for (std::size_t i = 0; i < staleness.size(); ++i) n += staleness[i], sum += double(i) * double(staleness[i]);
    return n == 0 ? 0.0 : sum / double(n);
  }
};

/// The whole job's counters (ParameterServer::gather_counters), the same on every rank.
struct JobCounters {
  std::vector<std::size_t> steps_per_worker;  ///< gradients each worker pushed since construction
  std::vector<ServerCounters> servers;        ///< each server's, in server order
  int max_lead = 0;                           ///< the largest over the servers
  std::size_t held_replies = 0;               ///< summed over the servers
};

namespace detail {
/// Step counts travel as floats, exact below 2^24: versions wrap there, and a staleness is their difference
/// modulo 2^24.
inline constexpr std::int64_t kVersionModulus = std::int64_t(1) << 24;
inline float version_of(std::size_t steps) { return float(std::int64_t(steps) % kVersionModulus); }
inline std::size_t staleness_since(std::size_t steps, float version) {
  return std::size_t(((std::int64_t(steps) - std::int64_t(version)) % kVersionModulus + kVersionModulus) %
                     kVersionModulus);
}
}  // namespace detail

/// Comm: the communicator (comm::Mpi); it must offer probe_any. Servers: how many of the ranks, the last ones,
/// hold parameter shards and run the optimizer.
template <CommunicatorPolicy Comm, int Servers = 1>
class ParameterServer {
  static_assert(Servers >= 1,
                "dist::ParameterServer<Comm, Servers> needs at least one server (Servers >= 1); to average "
                "gradients without servers, use dist::RingAllReduce or dist::MpiAllReduce");
  static_assert(req::has_probe_any<Comm>,
                "dist::ParameterServer needs a communicator with probe_any(tag), as comm::Mpi has: asynchronous "
                "servers take the gradient of whichever worker sends first");
  using request = decltype(std::declval<Comm&>().isend(std::span<const float>{}, 0, 0));

 public:
  /// for reports and checkpoints
  static constexpr std::string_view kName = "parameter_server";
  /// the last kServers ranks are servers
  static constexpr int kServers = Servers;

  /// How servers and workers talk.
  struct options {
    /// Free text every rank must agree on (batch size, data set ...), checked by start() with the parameter
    /// count, the optimizer, the number of servers and the sync mode.
    std::string configuration;
    /// A server waiting longer for a worker's message, or a worker for a server's reply (plus a grace), aborts
    /// the job naming the silent rank (see the file comment); 0: never.
    double timeout_seconds = kDefaultTimeoutSeconds;
    /// Async and BoundedStaleness<K>: a server steps with each gradient at the learning rate divided by the
    /// gradient's staleness + 1 (the staleness-aware step of Zhang et al., IJCAI 2016), so that a gradient
    /// computed on parameters many updates old moves them less. Sync has no staleness and ignores it.
    bool staleness_scaled_lr = false;
    /// Sync only: go on without a worker that dies (ULFM: Open MPI 5 under `mpirun --with-ft ulfm`; refused at
    /// start() elsewhere, and in the other modes, whose workers are at different places of the epoch): the
    /// survivors shrink the communicator, every worker takes the servers' shards, and the trainer deals the
    /// rest of the epoch over the workers left. A server that dies ends the job, naming it (its shard is lost).
    bool elastic = false;
  };

  /// Every sync mode runs on servers; Async and BoundedStaleness<K> let workers take uneven numbers of steps.
  template <class M>
  struct mode {
    /// whether workers may take different numbers of steps per epoch
    static constexpr bool kUnevenEpochs = !std::same_as<M, Sync>;
  };

  ParameterServer() : ParameterServer(options{}) {}
  /// Throws comm_error unless the job has more ranks than servers.
  explicit ParameterServer(options o, Comm comm = Comm()) : comm_(std::move(comm)), options_(std::move(o)) {
    if (comm_.size() <= Servers)
      throw comm_error("dist::ParameterServer: the job has " + std::to_string(comm_.size()) + " rank" +
                       (comm_.size() == 1 ? "" : "s") + " and " + std::to_string(Servers) + " server" +
                       (Servers == 1 ? "" : "s") + ", which leaves no worker; run at least " +
                       std::to_string(Servers + 1) + " ranks (mpirun -np " + std::to_string(Servers + 1) +
                       "), or use fewer servers");
  }

  /// The Strategy contract (dist/strategy_spec.hpp): this rank, the job's ranks, whether this rank trains
  /// (the first world_size() - kServers ranks do), the number of workers.
  /// @{
  int rank() const { return comm_.rank(); }
  int world_size() const { return comm_.size(); }
  bool is_worker() const { return comm_.rank() < workers(); }
  int workers() const { return comm_.size() - Servers; }
  /// @}
  /// This worker's index among the workers; 0 on a server, so that a loader built from it stays valid there
  /// (a server never reads it).
  int worker_index() const { return is_worker() ? comm_.rank() : 0; }
  /// This server's index, the shard it holds; -1 on a worker.
  int server_index() const { return is_worker() ? -1 : comm_.rank() - workers(); }
  /// The communicator, for collective calls of the program's own.
  Comm& communicator() noexcept { return comm_; }

  /// Where a server's shard lies in the flat parameters, and its optimizer's state (views of it).
  struct ShardState {
    /// the floats [begin, end) of the flat parameters that this server holds
    /// @{
    std::size_t begin = 0, end = 0;
    /// @}
    /// views of the shard optimizer's state
    optim::StateView optimizer;
  };
  /// On a server, after start() (for checkpoints): its shard and the state of the shard's optimizer, whose
  /// buffers a resume writes into; nothing on a worker, whose optimizer only supplies the learning rate.
  std::optional<ShardState> shard_state() {
    if (is_worker() || !shard_state_) return std::nullopt;
    return ShardState{shard(server_index()).begin, shard(server_index()).end, shard_state_()};
  }
  /// On a server: restores the step count of the shard's optimizer (a resume).
  void set_shard_steps(std::int64_t steps) {
    if (set_shard_steps_) set_shard_steps_(steps);
  }

  /// The servers keep the optimizer's state (the workers' optimizers only supply the learning rate).
  static constexpr bool kOptimizerOnServers = true;
  /// The checkpoint hook (dist/strategy_spec.hpp): on a server, its shard of `params`, the shard optimizer's
  /// buffers and steps, and the shard's range, which a resume must find the same; nothing on a worker.
  NamedState checkpoint_state(std::span<float> params) {
    NamedState state;
    const std::optional<ShardState> shard = shard_state();
    if (!shard) return state;
    state.tensors.emplace_back("shard.parameters", params.subspan(shard->begin, shard->end - shard->begin));
    for (const auto& [name, data] : shard->optimizer.buffers) state.tensors.emplace_back("shard.optimizer." + name, data);
    state.counts = {{"shard.optimizer.steps", std::uint64_t(shard->optimizer.steps)}};
    state.keys = {{"shard.begin", shard->begin}, {"shard.end", shard->end}};
    return state;
  }
  /// After a resume: the shard optimizer's saved step count.
  void restore_checkpoint_state(const NamedState& state) {
    set_shard_steps(std::int64_t(state.count("shard.optimizer.steps")));
  }

  /// On a server: what it saw so far. On a worker: max_lead is the largest lead the servers reported to it.
  const ServerCounters& counters() const noexcept { return counters_; }

  /// Collective over every rank, servers included: comm::require_agreement (the trainer checks its type, and
  /// its workers' batches with counted false on the servers).
  void require_agreement(std::span<const comm::Fact> facts, std::string_view who, bool counted = true) {
    comm::require_agreement(comm_, facts, who, counted);
  }

  /// Collective over every rank: every worker's steps and every server's counters, the same on every rank.
  JobCounters gather_counters() {
    constexpr std::size_t kBins = std::tuple_size_v<decltype(ServerCounters::staleness)>;
    constexpr std::size_t kPerServer = 4 + kBins;
    const std::size_t w = std::size_t(workers());
    std::vector<float> all(w + kPerServer * std::size_t(Servers), 0.0f);
    if (is_worker()) {
      all[std::size_t(worker_index())] = float(pushed_);
    } else {
      float* mine = all.data() + w + kPerServer * std::size_t(server_index());
      mine[0] = float(counters_.gradients), mine[1] = float(counters_.steps);
      mine[2] = float(counters_.held_replies), mine[3] = float(counters_.max_lead);
      std::copy(counters_.staleness.begin(), counters_.staleness.end(), mine + 4);
    }
    comm_.allreduce_sum(all);
    JobCounters job;
    for (std::size_t i = 0; i < w; ++i) job.steps_per_worker.push_back(std::size_t(all[i]));
    for (int s = 0; s < Servers; ++s) {
      const float* c = all.data() + w + kPerServer * std::size_t(s);
      ServerCounters& server = job.servers.emplace_back();
      server.gradients = std::size_t(c[0]), server.steps = std::size_t(c[1]);
      server.held_replies = std::size_t(c[2]), server.max_lead = int(c[3]);
      std::transform(c + 4, c + kPerServer, server.staleness.begin(), [](float n) { return std::size_t(n); });
      job.max_lead = std::max(job.max_lead, int(c[3]));
      job.held_replies += std::size_t(c[2]);
    }
    return job;
  }

  /// In Sync the servers relay a preemption within a step (strategy_spec.hpp); in the asynchronous modes the
  /// workers are at other steps, and the trainer preempts between epochs.
  template <class M>
  static constexpr bool kRelaysPreemption = std::same_as<M, Sync>;
  /// On a worker, before update(): whether this rank caught a preemption signal (sent with the gradient).
  void request_preemption(bool mine) noexcept { preemption_requested_ = mine; }
  /// After update() on a worker, after serve() on a server: whether a worker requested a preemption in that
  /// step (a server: in the epoch's last round), the same on every rank in Sync.
  bool preempting() const noexcept { return preempting_; }

  /// Not collective: a worker with `ok` false tells every server to stop (see the file comment) and returns
  /// false; true otherwise. The other ranks learn of it at their next exchange with a server.
  bool all_agree(bool ok) {
    if (ok || !is_worker() || stopped_) return ok;
    stopped_ = true;
    stop_ = {float(detail::ps_kind::stop), float(worker_index()), float(epoch_), float(step_)};
    for (int s = 0; s < Servers; ++s) comm_.send(stop_, server_rank(s), message_tag::kPushHeader);
    return false;
  }

  /// Whether options.elastic is on: the trainer goes on without a worker that dies (shrink_after_loss).
  bool elastic() const noexcept { return options_.elastic; }

  /// With options.elastic, on every survivor after an operation threw sinew::rank_lost (collective over the
  /// survivors): the communicator becomes the survivors' (Comm::shrink), what was in flight is dropped, and the
  /// servers serve the workers left. Returns the ranks lost, as the old communicator numbered them. Throws
  /// comm_error on every survivor if a server died: its shard of the parameters and of the optimizer's state
  /// died with it.
  std::vector<int> shrink_after_loss() {
    std::vector<int> lost;
    if constexpr (req::has_shrink<Comm>) {
      const int workers_before = workers();
      Comm survivors = comm_.shrink(lost);
      requests_.clear();  // of the old communicator, freed next
      comm_ = std::move(survivors);
      for (const int r : lost)
        if (r >= workers_before)
          throw comm_error("dist::ParameterServer: server rank " + std::to_string(r) + " died: its shard of the "
                           "parameters and of the optimizer's state died with it, so the job cannot go on "
                           "(options.elastic goes on without workers only); resume from the last checkpoint");
      if (comm_.size() <= Servers)
        throw comm_error("dist::ParameterServer: every worker died; nothing is left to train");
      const std::size_t w = std::size_t(workers());
      peers_.assign(w, peer::running);
      clocks_.assign(w, 0);
      held_.assign(w, false);
      update_seconds_.assign(w, 0.0f);
      last_heard_.assign(w, metrics::clock::now());
    } else {
      detail::require_fault_tolerance<Comm>("dist::ParameterServer");
    }
    return lost;
  }

  /// After shrink_after_loss, collective: every server's shard of the parameters, as its last step left it, to
  /// every rank, and its version (the step a worker's next gradient is computed on). In Sync a worker that died
  /// between pushing to one server and to another can leave the shards a step apart.
  void share_shards(std::span<float> params) {
    for (int s = 0; s < Servers; ++s) comm_.broadcast(slice(params, s), server_rank(s));
    const std::vector<std::uint64_t> steps =
        comm::gather_values(comm_, is_worker() ? std::uint64_t(0) : std::uint64_t(counters_.steps));
    for (int s = 0; s < Servers; ++s) versions_[std::size_t(s)] = detail::version_of(steps[std::size_t(server_rank(s))]);
  }

  /// Collective over every rank, servers included: checks that every rank runs the same configuration (else
  /// comm_error naming the first rank that differs), then gives every rank rank 0's parameters; servers build
  /// their shard's optimizer.
  template <SyncModePolicy M, OptimizerPolicy O>
  void start(std::span<float> params, O& optimizer) {
    if (options_.elastic) {
      if constexpr (!std::same_as<M, Sync>)
        throw comm_error("dist::ParameterServer: options.elastic needs Sync: in " + std::string(M::kName) +
                         " the workers are at different places of the epoch when one dies, so the rest of it "
                         "cannot be dealt over the others");
      detail::require_fault_tolerance<Comm>("dist::ParameterServer");
    }
    const comm::Fact facts[] = {{"number of servers", std::uint64_t(Servers)},
                                {"sync mode", comm::fingerprint(M::kName), true},
                                {"staleness bound", std::uint64_t(std::int64_t(detail::kStalenessBound<M>))}};
    detail::agree_and_broadcast<Comm, O>(comm_, params, "dist::ParameterServer", options_.configuration, facts);
    parameters_ = params.size();
    if (is_worker()) return;
    static_assert(requires { O(optimizer.hyper_parameters(), std::size_t{}); },
                  "dist::ParameterServer builds the optimizer of each shard on its server as "
                  "O(o.hyper_parameters(), shard size); give the optimizer that member (Sgd, Adam, AdamW and "
                  "RmsProp have it)");
    const std::size_t size = shard(server_index()).size();
    auto shard_optimizer = std::make_shared<O>(optimizer.hyper_parameters(), size);
    step_shard_ = [shard_optimizer](std::span<float> p, std::span<const float> g, float lr) {
      shard_optimizer->set_learning_rate(lr);
      shard_optimizer->step(p, g);
    };
    if constexpr (req::has_state<O>) {
      shard_state_ = [shard_optimizer] { return shard_optimizer->state(); };
      set_shard_steps_ = [shard_optimizer](std::int64_t n) { shard_optimizer->set_steps(n); };
    }
    gradient_.resize(size);
    if constexpr (std::same_as<M, Sync>) sum_.resize(size);
    peers_.assign(std::size_t(workers()), peer::running);
    clocks_.assign(std::size_t(workers()), 0);
    held_.assign(std::size_t(workers()), false);
    update_seconds_.assign(std::size_t(workers()), 0.0f);
    last_heard_.assign(std::size_t(workers()), metrics::clock::now());
  }

  /// On a worker: pushes each gradient shard to its server and pulls the shard's parameters back into params.
  /// Throws training_error when a server says another worker stopped.
  template <SyncModePolicy M, OptimizerPolicy O>
  void update(std::span<float> params, std::span<float> grads, O& optimizer, metrics::PhaseSeconds& phases) {
    // The version (2) is each server's own, set per server by exchange().
    const detail::ps_header push = {float(detail::ps_kind::gradient), optimizer.learning_rate(), 0,
                                    preemption_requested_ ? 1.0f : 0.0f, 0};
    exchange(params, push, grads, phases);
    ++step_, ++pushed_;
  }

  /// On a worker, after its last step of an epoch: tells the servers and receives every shard's final
  /// parameters, the same on every worker.
  template <SyncModePolicy M>
  void finish_epoch(std::span<float> params, metrics::PhaseSeconds& phases) {
    const detail::ps_header done = {float(detail::ps_kind::done), 0, 0, 0};
    // With uneven epochs the servers answer done only once the worker with the most steps is done too, which
    // may take long: not watched.
    exchange(params, done, {}, phases, /*watched=*/!mode<M>::kUnevenEpochs);
    ++epoch_;
    step_ = 0;
  }

  /// Collective over every rank, servers included, once every worker has finished the epoch and every server
  /// served it (the trainer calls it then, in every sync mode): the workers' running statistics become their
  /// mean, the same floats on every rank (the buffer hook of strategy_spec.hpp). The servers, which never
  /// train, add zeros; rank 0's sum goes to all, since MPI does not promise every rank the same to the bit.
  void synchronize_buffers(std::span<float> buffers) {
    if (buffers.empty()) return;
    if (!is_worker()) std::fill(buffers.begin(), buffers.end(), 0.0f);
    comm_.allreduce_sum(buffers);
    comm_.broadcast(buffers, 0);
    const float share = 1.0f / float(workers());
    for (float& x : buffers) x *= share;
  }

  /// On a server: serves one epoch, until every worker has sent done; returns the optimizer steps taken. Throws
  /// training_error once every worker has been told to stop, if one stopped.
  template <SyncModePolicy M>
  std::size_t serve(std::span<float> params, metrics::PhaseSeconds& phases) {
    require_usable();
    const std::span<float> mine = slice(params, server_index());
    std::fill(peers_.begin(), peers_.end(), peer::running);
    std::fill(clocks_.begin(), clocks_.end(), 0);
    std::fill(held_.begin(), held_.end(), false);
    // Called again for the same epoch after a worker died (elastic): its steps count from the epoch's start.
    if (!serving_) serving_ = true, epoch_steps_from_ = counters_.steps;
    std::fill(last_heard_.begin(), last_heard_.end(), metrics::clock::now());
    preempting_ = false;
    metrics::Stopwatch watch;
    update_time_ = 0;
    if constexpr (std::same_as<M, Sync>)
      serve_rounds(mine);
    else
      serve_arrivals<M>(mine);
    if (stopped_) {
      drain(mine);
      throw training_error("dist::ParameterServer: server rank " + std::to_string(rank()) +
                           " stops serving: " + stop_cause() + ", and every worker has been told to stop");
    }
    for (int w = 0; w < workers(); ++w) reply(w, detail::ps_kind::params, mine, 0, 0);
    phases.update += update_time_;
    phases.comm += watch.elapsed() - update_time_;
    ++epoch_;
    serving_ = false;
    return counters_.steps - epoch_steps_from_;
  }

 private:
  enum class peer : std::uint8_t { running, waiting, done, gone };

  int server_rank(int s) const { return workers() + s; }
  std::size_t shard_begin(int s) const { return std::size_t(s) * parameters_ / std::size_t(Servers); }
  struct range {
    std::size_t begin, end;
    std::size_t size() const { return end - begin; }
    bool empty() const { return begin == end; }
  };
  range shard(int s) const { return {shard_begin(s), shard_begin(s + 1)}; }
  template <class T>
  std::span<T> slice(std::span<T> all, int s) const {
    return all.subspan(shard(s).begin, shard(s).size());
  }

  void require_usable() const {
    if (stopped_)
      throw training_error("dist::ParameterServer: training stopped earlier (" + stop_cause() +
                           "); construct a new trainer to train again");
  }

  std::string stop_cause() const {
    return "worker " + std::to_string(int(stop_[1])) + "'s loss is NaN or infinite at epoch " +
           std::to_string(int(stop_[2])) + ", step " + std::to_string(std::int64_t(stop_[3]));
  }

  // ---- worker side ----

  void exchange(std::span<float> params, const detail::ps_header& push, std::span<const float> grads,
                metrics::PhaseSeconds& phases, bool watched = true) {
    require_usable();
    metrics::Stopwatch watch;
    const bool with_gradient = push[0] == float(detail::ps_kind::gradient);
    requests_.clear();
    for (int s = 0; s < Servers; ++s) {
      requests_.push_back(comm_.irecv(replies_[std::size_t(s)], server_rank(s), message_tag::kReplyHeader));
      requests_.push_back(comm_.irecv(slice(params, s), server_rank(s), message_tag::kReplyPayload));
    }
    for (int s = 0; s < Servers; ++s) {
      // Each server's header carries the version of that server's shard that the gradient was computed on.
      detail::ps_header& header = pushes_[std::size_t(s)];
      header = push;
      if (with_gradient) header[2] = versions_[std::size_t(s)];
      requests_.push_back(comm_.isend(header, server_rank(s), message_tag::kPushHeader));
      if (with_gradient) requests_.push_back(comm_.isend(slice(grads, s), server_rank(s), message_tag::kPushPayload));
    }
    wait_for_servers(watched);
    requests_.clear();

    double update = 0;
    int told_by = -1;
    if (with_gradient) preempting_ = false;
    for (int s = 0; s < Servers; ++s) {
      const detail::ps_header& reply = replies_[std::size_t(s)];
      if (reply[0] == float(detail::ps_kind::stop)) {
        told_by = s;
        stop_ = reply;
      } else {
        update = std::max(update, double(reply[1]));
        if (with_gradient && reply[4] != 0.0f) preempting_ = true;
        counters_.max_lead = std::max(counters_.max_lead, int(reply[2]));
        versions_[std::size_t(s)] = reply[3];
      }
    }
    if (told_by >= 0) {
      stopped_ = true;
      for (int s = 0; s < Servers; ++s)
        if (replies_[std::size_t(s)][0] != float(detail::ps_kind::stop))
          comm_.send(stop_, server_rank(s), message_tag::kPushHeader);
      throw training_error("dist::ParameterServer: worker " + std::to_string(worker_index()) + " stops at epoch " +
                           std::to_string(epoch_) + ", step " + std::to_string(step_) + " because " +
                           stop_cause() + " (told by server rank " + std::to_string(server_rank(told_by)) +
                           "); this worker holds the servers' latest parameters");
    }
    const double total = watch.elapsed();
    update = std::min(update, total);
    phases.update += update;
    phases.comm += total - update;
  }

  // Waits for every request of this step: requests_ holds each server's two receives, then the sends. After
  // timeout_seconds plus the grace, aborts the job naming the servers that have not replied.
  void wait_for_servers(bool watched) {
    if (options_.timeout_seconds <= 0 || !watched) {
      for (request& r : requests_) r.wait();
      return;
    }
    const auto start = metrics::clock::now();
    const auto limit = std::chrono::duration<double>(options_.timeout_seconds + grace());
    detail::patient_wait wait;
    for (;;) {
      bool all = true;
      for (request& r : requests_) all = bool(r.test()) && all;
      if (all) return;
      if (metrics::clock::now() - start > limit) break;
      wait.pause();
    }
    std::string silent;
    for (int s = 0; s < Servers; ++s)
      if (!requests_[std::size_t(2 * s)].test() || !requests_[std::size_t(2 * s + 1)].test())
        silent += (silent.empty() ? "" : ", ") + std::to_string(server_rank(s));
    comm_.abort(2, "dist::ParameterServer: worker rank " + std::to_string(rank()) + " waited " +
                       seconds(options_.timeout_seconds + grace()) + " for the reply of server rank " +
                       (silent.empty() ? std::string("?") : silent) + " at epoch " + std::to_string(epoch_) +
                       ", step " + std::to_string(step_) +
                       ": the server has probably died or hangs (options.timeout_seconds sets this limit; 0 "
                       "waits forever)");
  }

  double grace() const {
    const double t = options_.timeout_seconds;
    return std::clamp(t / 5, std::min(1.0, t / 2), 5.0);
  }

  static std::string seconds(double s) {
    char text[32];
    std::snprintf(text, sizeof text, "%g s", s);
    return text;
  }

  // ---- server side ----

  // Aborts the job if worker w, whose message the server waits for, has been silent beyond the limit.
  void check_silence(int w) {
    if (options_.timeout_seconds <= 0) return;
    const std::chrono::duration<double> silent = metrics::clock::now() - last_heard_[std::size_t(w)];
    if (silent.count() <= options_.timeout_seconds) return;
    comm_.abort(2, "dist::ParameterServer: server rank " + std::to_string(rank()) + " has heard nothing for " +
                       seconds(options_.timeout_seconds) + " from worker rank " + std::to_string(w) +
                       ", whose next message it waits for at epoch " + std::to_string(epoch_) +
                       ": the worker has probably died or hangs (options.timeout_seconds sets this limit; 0 "
                       "waits forever)");
  }

  // A receive from worker w, watched.
  void receive_from(int w, std::span<float> data, int tag) {
    if (options_.timeout_seconds <= 0) return comm_.recv(data, w, tag);
    request r = comm_.irecv(data, w, tag);
    detail::patient_wait wait;
    while (!r.test()) {
      check_silence(w);
      wait.pause();
    }
    last_heard_[std::size_t(w)] = metrics::clock::now();
  }

  detail::ps_header receive_header(int w) {
    detail::ps_header h{};
    receive_from(w, h, message_tag::kPushHeader);
    return h;
  }

  // The next worker whose message has come (Async): watches every worker the server waits for.
  int next_sender() {
    if (options_.timeout_seconds <= 0) return comm_.probe_any(message_tag::kPushHeader);
    detail::patient_wait wait;
    for (;;) {
      // Every time, not only when nothing came: the other workers' messages must not hide a silent one.
      for (int v = 0; v < workers(); ++v)
        if (peers_[std::size_t(v)] == peer::running) check_silence(v);
      const int w = comm_.iprobe_any(message_tag::kPushHeader);
      if (w >= 0) return w;
      wait.pause();
    }
  }

  void reply(int w, detail::ps_kind kind, std::span<const float> mine, float seconds, int lead,
             bool preempt = false) {
    const detail::ps_header h = kind == detail::ps_kind::stop
                                    ? stop_
                                    : detail::ps_header{float(kind), seconds, float(lead),
                                                        detail::version_of(counters_.steps), preempt ? 1.0f : 0.0f};
    comm_.send(h, w, message_tag::kReplyHeader);
    comm_.send(mine, w, message_tag::kReplyPayload);
    last_heard_[std::size_t(w)] = metrics::clock::now();  // its next message is due from now
  }

  float timed_step(std::span<float> mine, std::span<const float> gradient, float lr) {
    metrics::Stopwatch watch;
    step_shard_(mine, gradient, lr);
    const double seconds = watch.elapsed();
    update_time_ += seconds;
    ++counters_.steps;
    return float(seconds);
  }

  // A gradient's staleness: the updates since the version it was computed on (header[2]).
  std::size_t record_staleness(const detail::ps_header& h) {
    const std::size_t late = detail::staleness_since(counters_.steps, h[2]);
    ++counters_.staleness[std::min(late, counters_.staleness.size() - 1)];
    return late;
  }

  // A worker's stop: remember why; drain() tells the others.
  void record_stop(int w, const detail::ps_header& h) {
    stopped_ = true;
    stop_ = h;
    peers_[std::size_t(w)] = peer::gone;
  }

  bool any(std::initializer_list<peer> states) const {
    return std::any_of(peers_.begin(), peers_.end(), [&](peer p) {
      return std::find(states.begin(), states.end(), p) != states.end();
    });
  }

  // Sync: rounds of one message per worker still running, in worker order.
  void serve_rounds(std::span<float> mine) {
    while (any({peer::running})) {
      int gradients = 0;
      float lr = 0;
      bool preempt = false;  // some worker caught a preemption signal: every worker of the round hears it
      for (int w = 0; w < workers(); ++w) {
        if (peers_[std::size_t(w)] != peer::running) continue;
        const detail::ps_header h = receive_header(w);
        switch (detail::ps_kind(int(h[0]))) {
          case detail::ps_kind::gradient:
            receive_from(w, gradients == 0 ? std::span<float>(sum_) : std::span<float>(gradient_),
                         message_tag::kPushPayload);
            if (gradients > 0) simd::add(sum_.data(), gradient_.data(), sum_.data(), sum_.size());
            record_staleness(h);
            ++gradients, ++counters_.gradients;
            lr = h[1];
            preempt = preempt || h[3] != 0.0f;
            peers_[std::size_t(w)] = peer::waiting;
            break;
          case detail::ps_kind::done: peers_[std::size_t(w)] = peer::done; break;
          default: record_stop(w, h); return;
        }
      }
      if (gradients == 0) continue;
      if (gradients > 1) detail::scale(sum_, 1.0f / float(gradients));
      const float seconds = timed_step(mine, sum_, lr);
      for (int w = 0; w < workers(); ++w)
        if (peers_[std::size_t(w)] == peer::waiting) {
          reply(w, detail::ps_kind::params, mine, seconds, 0, preempt);
          peers_[std::size_t(w)] = peer::running;
        }
      preempting_ = preempting_ || preempt;
    }
  }

  // Async and BoundedStaleness<K>: each message as it comes.
  template <class M>
  void serve_arrivals(std::span<float> mine) {
    while (any({peer::running, peer::waiting})) {
      const int w = next_sender();
      const detail::ps_header h = receive_header(w);
      switch (detail::ps_kind(int(h[0]))) {
        case detail::ps_kind::gradient: {
          receive_from(w, gradient_, message_tag::kPushPayload);
          const std::size_t late = record_staleness(h);
          const float lr = options_.staleness_scaled_lr ? h[1] / float(late + 1) : h[1];
          update_seconds_[std::size_t(w)] = timed_step(mine, gradient_, lr);
          ++clocks_[std::size_t(w)], ++counters_.gradients;
          peers_[std::size_t(w)] = peer::waiting;
          break;
        }
        case detail::ps_kind::done: peers_[std::size_t(w)] = peer::done; break;
        default: record_stop(w, h); return;
      }
      release<M>(mine);
    }
  }

  // Replies to every waiting worker whose lead is within the bound (Async: every one).
  template <class M>
  void release(std::span<float> mine) {
    std::int64_t slowest = -1;
    for (int w = 0; w < workers(); ++w)
      if (peers_[std::size_t(w)] == peer::running || peers_[std::size_t(w)] == peer::waiting)
        slowest = slowest < 0 ? clocks_[std::size_t(w)] : std::min(slowest, clocks_[std::size_t(w)]);
    for (int w = 0; w < workers(); ++w) {
      if (peers_[std::size_t(w)] != peer::waiting) continue;
      const int lead = int(clocks_[std::size_t(w)] - slowest);
      if (detail::kStalenessBound<M> >= 0 && lead > detail::kStalenessBound<M>) {
        if (!held_[std::size_t(w)]) ++counters_.held_replies;
        held_[std::size_t(w)] = true;
        continue;
      }
      held_[std::size_t(w)] = false;
      counters_.max_lead = std::max(counters_.max_lead, lead);
      reply(w, detail::ps_kind::params, mine, update_seconds_[std::size_t(w)], lead);
      peers_[std::size_t(w)] = peer::running;
    }
  }

  // After a stop: tells every worker that is waiting for a reply, then takes the next message of every worker
  // still running (it sends one: a gradient, done, or its own stop) and answers it with stop.
  void drain(std::span<float> mine) {
    for (int w = 0; w < workers(); ++w) {
      if (peers_[std::size_t(w)] == peer::waiting || peers_[std::size_t(w)] == peer::done) {
        reply(w, detail::ps_kind::stop, mine, 0, 0);
        peers_[std::size_t(w)] = peer::gone;
      }
    }
    for (int w = 0; w < workers(); ++w) {
      if (peers_[std::size_t(w)] != peer::running) continue;
      const detail::ps_header h = receive_header(w);
      if (h[0] == float(detail::ps_kind::gradient)) receive_from(w, gradient_, message_tag::kPushPayload);
      if (h[0] != float(detail::ps_kind::stop)) reply(w, detail::ps_kind::stop, mine, 0, 0);
      peers_[std::size_t(w)] = peer::gone;
    }
  }

  Comm comm_;
  options options_;
  std::size_t parameters_ = 0;
  int epoch_ = 0;           // epochs finished (worker) or served (server)
  std::int64_t step_ = 0;   // worker: steps in this epoch
  std::size_t pushed_ = 0;  // worker: gradients pushed since construction
  bool stopped_ = false;
  bool preemption_requested_ = false, preempting_ = false;  // the preemption relay (Sync)
  detail::ps_header stop_{};  // the stop message: {stop, worker, epoch, step}
  ServerCounters counters_;

  // Worker.
  std::array<detail::ps_header, std::size_t(Servers)> replies_{};
  std::array<detail::ps_header, std::size_t(Servers)> pushes_{};
  std::array<float, std::size_t(Servers)> versions_{};  // of each shard this worker's parameters hold
  std::vector<request> requests_;

  // Server.
  std::function<void(std::span<float>, std::span<const float>, float)> step_shard_;
  std::function<optim::StateView()> shard_state_;
  std::function<void(std::int64_t)> set_shard_steps_;
  std::vector<float> gradient_, sum_;
  std::vector<peer> peers_;
  std::vector<std::int64_t> clocks_;  // gradients from each worker this epoch
  std::vector<bool> held_;            // whether the worker's pending reply has been held back
  std::vector<float> update_seconds_; // of each waiting worker's gradient
  std::vector<metrics::clock::time_point> last_heard_;  // a message from, or a reply to, each worker
  double update_time_ = 0;
  bool serving_ = false;               // inside an epoch's serve() (again after a worker died)
  std::size_t epoch_steps_from_ = 0;   // counters_.steps when the epoch's serving began
};

static_assert(StrategyPolicy<ParameterServer<comm::example::single_process, 1>>);
static_assert(req::has_buffer_sync<ParameterServer<comm::example::single_process, 1>>);

}  // namespace sinew::dist
