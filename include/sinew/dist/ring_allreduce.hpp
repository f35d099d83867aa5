// sinew/dist/ring_allreduce.hpp: synchronous data parallelism with a bandwidth-optimal ring all-reduce.
//
//   using Strategy = sinew::dist::RingAllReduce<sinew::comm::Mpi>;  // reduce-scatter + all-gather ring
//   using Train    = sinew::Trainer<Net, Backend, Strategy, sinew::Sync>;
//
// The ring all-reduce itself (its algorithm, chunks and transports) is comm/ring_allreduce.hpp; this is the
// strategy around it.
//
// The strategy sums the gradient in buckets of options.bucket_bytes, cut on layer boundaries in reverse layer
// order (dist/buckets.hpp), one ring after the other. With options.overlap, the trainer's hooks queue a bucket
// as soon as backward has written its gradients, and after every later layer advance the ring as far as the
// arrived messages allow (RingOperation), on the training thread: no thread, no MPI_THREAD_MULTIPLE. update()
// then drives what is left to the end.
//
// BatchNorm's running statistics are averaged over the ranks at every epoch's end by the same ring
// (synchronize_buffers, the buffer hook of strategy_spec.hpp), so every rank holds the same floats.
//
// SyncBatchNorm2d's statistics cross the ranks through sum_over_workers, a ring of their own on their own tag
// (message_tag::kSyncBatchNorm) and buffers, so it may run inside backward while a bucket's ring is in flight.
//
// Determinism: each float of the sum is added in the ring's order, whatever order messages arrive in, so with
// the same seeds, ranks and threads a Sync run repeats bit for bit, and a run resumed from a checkpoint ends
// where the run that was not stopped ends (tests/dist/test_resume.cpp). With options.transport =
// RingTransport::hierarchical (several ranks on each of several hosts: the host's shared window, then a ring
// across hosts) each float is added in another fixed order, so runs repeat bit for bit too, and differ from the
// flat ring's within rounding.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sinew/comm/agreement.hpp"
#include "sinew/comm/communicator_spec.hpp"
#include "sinew/comm/ring_allreduce.hpp"
#include "sinew/core/diagnostics.hpp"
#include "sinew/core/error.hpp"
#include "sinew/core/message_tags.hpp"
#include "sinew/dist/detail/allreduce_common.hpp"
#include "sinew/dist/options.hpp"
#include "sinew/dist/strategy_spec.hpp"
#include "sinew/dist/sync_mode.hpp"
#include "sinew/metrics/timer.hpp"
#include "sinew/optim/optimizer_spec.hpp"

namespace sinew::dist {

/// Comm: the communicator whose point-to-point messages carry the ring (comm::Mpi).
template <CommunicatorPolicy Comm>
class RingAllReduce : public detail::allreduce_base<Comm, RingAllReduce<Comm>> {
  using base = detail::allreduce_base<Comm, RingAllReduce<Comm>>;
  friend base;

 public:
  /// for reports and checkpoints
  static constexpr std::string_view kName = "ring_allreduce";

  /// How the ring sums the gradients.
  struct options {
    /// Free text every rank must agree on (batch size, data set ...), checked by start() with the parameter
    /// count, the optimizer and the chunk size.
    std::string configuration;
    std::size_t chunk_floats = kRingChunkAuto;  ///< floats per message (auto: by the hosts); 0: one per segment
    /// messages, the shared window (automatic: by the hosts), or hierarchical (window within hosts, ring across)
    RingTransport transport = RingTransport::automatic;
    /// hierarchical: ranks per host, 0 as the launcher placed them (k: every k consecutive ranks, on one machine)
    int host_ranks = 0;
    std::size_t bucket_bytes = kDefaultBucketBytes;  ///< gradient bytes per ring; 0: one ring for all
    bool overlap = true;          ///< start each bucket's ring during backward (off: all after backward)
    /// waiting longer in a collective aborts the job naming silent ranks; 0: never
    double timeout_seconds = kDefaultTimeoutSeconds;
    /// Go on without a rank that dies (ULFM: Open MPI 5 under `mpirun --with-ft ulfm`; refused at start()
    /// elsewhere): the survivors shrink the communicator and the trainer re-deals the data over them. The ring
    /// then sends messages (RingTransport::automatic means messages): a survivor spinning on a shared window
    /// would never hear that its peer died.
    bool elastic = false;
    /// Where the ring sums through shared memory (one host, or each host's part of the hierarchy): the model's
    /// gradients live in it (gradient_storage), so that the ranks sum from each other's gradients without
    /// copying them into the window first. false: the model keeps its own, copied in and out.
    bool share_gradients = true;
  };

  template <class M>
  struct mode {
    static_assert(dependent_false<M>,
                  "RingAllReduce has no asynchronous mode; use dist::ParameterServer<Comm, Servers> with Async");
  };
  template <class M>
    requires std::same_as<M, Sync>
  struct mode<M> {};

  RingAllReduce() : RingAllReduce(options{}) {}
  /// Over the ranks of `comm` (by default all of the job's). Collective.
  explicit RingAllReduce(options o, Comm comm = Comm())
      : base(std::move(comm), {o.bucket_bytes, o.overlap, o.timeout_seconds, o.elastic}, "dist::RingAllReduce"),
        options_(std::move(o)) {
    work_.host_ranks = options_.host_ranks;
    if (options_.elastic && options_.transport == RingTransport::automatic) options_.transport = RingTransport::messages;
  }

  /// Collective: checks that every rank runs the same configuration (else comm_error naming the first rank
  /// that differs), then gives every rank rank 0's parameters.
  template <SyncModePolicy M, OptimizerPolicy O>
  void start(std::span<float> params, O&) {
    static_assert(sizeof(mode<M>) > 0);
    if (options_.elastic) {
      detail::require_fault_tolerance<Comm>("dist::RingAllReduce");
      if (options_.transport != RingTransport::messages)
        throw comm_error("dist::RingAllReduce: options.elastic needs RingTransport::messages (or automatic): a rank "
                         "waiting on the shared window would never hear that a peer died");
    }
    std::vector<comm::Fact> facts = {{"ring chunk size", ring_chunk_floats(this->comm_, options_.chunk_floats)},
                                     {"ring transport", std::size_t(options_.transport)},
                                     {"ring ranks per host", std::size_t(options_.host_ranks)},
                                     {"ring shares gradients", std::size_t(options_.share_gradients)}};
    const std::vector<comm::Fact> buckets = this->bucket_facts(params.size());
    facts.insert(facts.end(), buckets.begin(), buckets.end());
    detail::agree_and_broadcast<Comm, O>(this->comm_, params, "dist::RingAllReduce", options_.configuration, facts);
    // The shared window, if the ring uses one, sized for the largest bucket now, while every rank is here.
    std::size_t largest = 0;
    for (const Bucket& b : this->buckets()) largest = std::max(largest, b.size());
    RingOperation<Comm>::reserve(this->comm_, work_, largest, options_.transport);
  }

  /// Collective, after start(): memory for the model's `floats` gradients that the ranks of this host read from
  /// each other (the optional gradient-storage hook of strategy_spec.hpp), or empty where the ring sends
  /// messages, runs elastic (its communicator may shrink) or options.share_gradients is false. It lives as long
  /// as the strategy.
  std::span<float> gradient_storage(std::size_t floats) {
    if (!options_.share_gradients || options_.elastic) return {};
    shared_gradients_ = RingOperation<Comm>::share(this->comm_, work_, floats, options_.transport);
    return shared_gradients_;
  }
  /// What gradient_storage() gave this rank (empty: none, the model keeps its own gradients).
  std::span<float> shared_gradients() const noexcept { return shared_gradients_; }

  /// Collective, blocking: `data` becomes its sum over the ranks, the same floats on every rank (the cross-worker
  /// sum of strategy_spec.hpp, for SyncBatchNorm2d), watched as the gradients' ring is. Inside backward a
  /// bucket's ring may be in flight: this one has its own tag and workspace, and sends messages (not the shared
  /// window, which the buckets' ring holds), so neither receives the other's messages; the bucket's ring goes
  /// on at the next hook.
  void sum_over_workers(std::span<float> data) {
    if (this->comm_.size() == 1 || data.empty()) return;
    RingOperation<Comm> ring;
    ring.start(this->comm_, data, statistics_work_, 0, message_tag::kSyncBatchNorm, RingTransport::messages);
    this->wait_watched([&] { return ring.advance(); }, "a SyncBatchNorm2d's all-reduce of its statistics");
  }

  /// Collective: params -= optimizer(mean of every rank's grads). grads holds the mean afterwards.
  template <SyncModePolicy M, OptimizerPolicy O>
  void update(std::span<float> params, std::span<float> grads, O& optimizer, metrics::PhaseSeconds& phases) {
    static_assert(sizeof(mode<M>) > 0);
    this->average_and_step(params, grads, optimizer, phases);
  }

 private:
  // One ring at a time: the ranks start the queued buckets in the same order, so one tag serves them all.
  void submit(std::span<float> bucket) {
    queued_.push_back(bucket);
    poll();
  }

  // The ring gives every rank the same floats: each segment is summed on one rank and passed on as it is. Only
  // at an epoch's end, when no bucket is in flight, so the gradients' workspace is free.
  void sum_buffers(std::span<float> buffers) {
    ring_allreduce_sum(this->comm_, buffers, work_, options_.chunk_floats, options_.transport);
  }

  // shrink_after_loss's: the rings of the old communicator are dropped; the ring sends messages when elastic,
  // so there is no window to allocate again.
  void drop_in_flight() {
    ring_ = RingOperation<Comm>{};
    queued_.clear();
    running_ = false;
    work_ = RingWorkspace<Comm>{};
    statistics_work_ = RingWorkspace<Comm>{};
    work_.host_ranks = options_.host_ranks;
  }
  void after_shrink() {}

  bool poll() {
    for (;;) {
      if (running_) {
        if (!ring_.advance()) return false;
        running_ = false;
        this->bucket_ends();
      }
      if (queued_.empty()) return true;
      this->bucket_begins();
      ring_.start(this->comm_, queued_.front(), work_, options_.chunk_floats, detail::kRingTag, options_.transport);
      running_ = true;
      queued_.pop_front();
    }
  }

  options options_;
  RingWorkspace<Comm> work_;
  RingWorkspace<Comm> statistics_work_;  // sum_over_workers's, apart from the buckets'
  RingOperation<Comm> ring_;
  std::deque<std::span<float>> queued_;
  bool running_ = false;  // a bucket's ring started and not yet seen to end
  std::span<float> shared_gradients_;  // in work_'s shared data (gradient_storage), or empty
};

static_assert(StrategyPolicy<RingAllReduce<comm::example::single_process>>);
static_assert(req::has_buffer_sync<RingAllReduce<comm::example::single_process>>);
static_assert(req::has_sum_over_workers<RingAllReduce<comm::example::single_process>>);

}  // namespace sinew::dist
