// sinew/dist/mpi_allreduce.hpp: synchronous data parallelism with the communicator's own all-reduce.
//
//   using Strategy = sinew::dist::MpiAllReduce<sinew::comm::Mpi>;  // MPI_Allreduce, as the MPI library chooses
//   using Train    = sinew::Trainer<Net, Backend, Strategy, sinew::Sync>;
//   Train trainer(options, sgd, Strategy({.configuration = "cifar10 batch=64"}));
//
// Every step sums every rank's gradient with the communicator's all-reduce (MPI_Iallreduce for comm::Mpi: the
// MPI library picks its algorithm), divides by the number of ranks, and every rank applies the same optimizer
// step, so the replicas stay equal. The reference to compare dist::RingAllReduce with.
//
// The gradient is summed in buckets of options.bucket_bytes, cut on layer boundaries in reverse layer order
// (dist/buckets.hpp). With options.overlap, the trainer's hooks start a bucket's non-blocking all-reduce as soon
// as backward has written its gradients, and test the ones in flight after every later layer: Open MPI moves a
// non-blocking collective on only inside MPI calls, so these tests are its progress. update() then waits only
// for what is still in flight.
//
// BatchNorm's running statistics are averaged over the ranks at every epoch's end (synchronize_buffers, the
// buffer hook of strategy_spec.hpp): MPI_Allreduce, then rank 0's result broadcast, so every rank holds the same.
//
// Determinism is MPI's: the order in which MPI_Allreduce adds the ranks' floats is the MPI library's choice
// (its algorithm may depend on the message size, the process placement and the library's tuning), so sinew
// does not promise that two runs are bitwise identical, nor that a resumed run ends exactly where the run that
// was not stopped ends, though with one MPI build on one set of hosts both held in the tests. For a promise,
// use dist::RingAllReduce.
#pragma once

#include <concepts>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sinew/comm/communicator_spec.hpp"
#include "sinew/core/diagnostics.hpp"
#include "sinew/dist/detail/allreduce_common.hpp"
#include "sinew/dist/options.hpp"
#include "sinew/dist/strategy_spec.hpp"
#include "sinew/dist/sync_mode.hpp"
#include "sinew/metrics/timer.hpp"
#include "sinew/optim/optimizer_spec.hpp"

namespace sinew::dist {

/// Comm: the communicator whose allreduce_sum combines the gradients (comm::Mpi).
template <CommunicatorPolicy Comm>
class MpiAllReduce : public detail::allreduce_base<Comm, MpiAllReduce<Comm>> {
  using base = detail::allreduce_base<Comm, MpiAllReduce<Comm>>;
  friend base;

 public:
  /// for reports and checkpoints
  static constexpr std::string_view kName = "mpi_allreduce";

  /// How the gradients are summed.
  struct options {
    /// Free text every rank must agree on (batch size, data set ...), checked by start() with the parameter
    /// count and the optimizer.
    std::string configuration;
    std::size_t bucket_bytes = kDefaultBucketBytes;  ///< gradient bytes per all-reduce; 0: one for all
    bool overlap = true;          ///< start each bucket's all-reduce during backward (off: all after backward)
    /// waiting longer in a collective aborts the job naming silent ranks; 0: never
    double timeout_seconds = kDefaultTimeoutSeconds;
    /// Go on without a rank that dies (ULFM: Open MPI 5 under `mpirun --with-ft ulfm`; refused at start()
    /// elsewhere): the survivors shrink the communicator and the trainer re-deals the data over them.
    bool elastic = false;
  };

  template <class M>
  struct mode {
    static_assert(dependent_false<M>,
                  "MpiAllReduce is synchronous: every step all-reduces every rank's gradient; for Async or "
                  "BoundedStaleness<K> use dist::ParameterServer<Comm, Servers>");
  };
  template <class M>
    requires std::same_as<M, Sync>
  struct mode<M> {};

  MpiAllReduce() : MpiAllReduce(options{}) {}
  /// Over the ranks of `comm` (by default all of the job's). Collective.
  explicit MpiAllReduce(options o, Comm comm = Comm())
      : base(std::move(comm), {o.bucket_bytes, o.overlap, o.timeout_seconds, o.elastic}, "dist::MpiAllReduce"),
        options_(std::move(o)) {}

  /// Collective: checks that every rank runs the same configuration (else comm_error naming the first rank
  /// that differs), then gives every rank rank 0's parameters.
  template <SyncModePolicy M, OptimizerPolicy O>
  void start(std::span<float> params, O&) {
    static_assert(sizeof(mode<M>) > 0);
    if (options_.elastic) detail::require_fault_tolerance<Comm>("dist::MpiAllReduce");
    const std::vector<comm::Fact> buckets = this->bucket_facts(params.size());
    detail::agree_and_broadcast<Comm, O>(this->comm_, params, "dist::MpiAllReduce", options_.configuration, buckets);
  }

  /// Collective, blocking: `data` becomes its sum over the ranks (the cross-worker sum of strategy_spec.hpp, for
  /// SyncBatchNorm2d), watched as the gradients' all-reduce is. It may come between the buckets' non-blocking
  /// all-reduces inside backward: MPI requires every rank to start its collectives on a communicator in one
  /// order, and every rank starts the same buckets before the same layer (the hooks cut them on layer
  /// boundaries), so each rank's order is the same.
  void sum_over_workers(std::span<float> data) {
    if (this->comm_.size() == 1 || data.empty()) return;
    auto request = this->comm_.iallreduce_sum(data);
    this->wait_watched([&] { return bool(request.test()); }, "a SyncBatchNorm2d's all-reduce of its statistics");
  }

  /// Collective: params -= optimizer(mean of every rank's grads). grads holds the mean afterwards.
  template <SyncModePolicy M, OptimizerPolicy O>
  void update(std::span<float> params, std::span<float> grads, O& optimizer, metrics::PhaseSeconds& phases) {
    static_assert(sizeof(mode<M>) > 0);
    this->average_and_step(params, grads, optimizer, phases);
  }

 private:
  using request = decltype(std::declval<Comm&>().iallreduce_sum(std::span<float>()));

  void submit(std::span<float> bucket) {
    this->bucket_begins();
    in_flight_.push_back(this->comm_.iallreduce_sum(bucket));
  }

  // MPI does not promise that every rank's sum is the same to the bit (each rank may add in another order), so
  // rank 0's goes to all: a few floats per BatchNorm channel, once an epoch.
  void sum_buffers(std::span<float> buffers) {
    this->comm_.allreduce_sum(buffers);
    this->comm_.broadcast(buffers, 0);
  }

  // shrink_after_loss's: the requests of the old communicator (revoked: each ends at once) are dropped.
  void drop_in_flight() {
    in_flight_.clear();
    done_ = 0;
  }
  void after_shrink() {}

  bool poll() {
    for (; done_ < in_flight_.size(); ++done_) {
      if (!in_flight_[done_].test()) return false;
      this->bucket_ends();
    }
    in_flight_.clear();
    done_ = 0;
    return true;
  }

  options options_;
  std::vector<request> in_flight_;
  std::size_t done_ = 0;
};

static_assert(StrategyPolicy<MpiAllReduce<comm::example::single_process>>);
static_assert(req::has_buffer_sync<MpiAllReduce<comm::example::single_process>>);
static_assert(req::has_sum_over_workers<MpiAllReduce<comm::example::single_process>>);

}  // namespace sinew::dist
