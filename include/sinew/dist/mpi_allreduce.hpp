// sinew/dist/mpi_allreduce.hpp: synchronous data parallelism with the communicator's own all-reduce.
//
//   using Strategy = sinew::dist::MpiAllReduce<sinew::comm::Mpi>;  // MPI_Allreduce, as the MPI library chooses
//   using Train    = sinew::Trainer<Net, Backend, Strategy, sinew::Sync>;
//   Train trainer(options, sgd, Strategy({.configuration = "cifar10 batch=64"}));
//
// Every step sums every rank's gradient with one blocking all-reduce (MPI_Allreduce for comm::Mpi: the MPI
// library picks its algorithm), divides by the number of ranks, and every rank applies the same optimizer
// step, so the replicas stay equal. The reference to compare dist::RingAllReduce with.
#pragma once

#include <concepts>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "sinew/comm/communicator_spec.hpp"
#include "sinew/core/diagnostics.hpp"
#include "sinew/dist/detail/allreduce_common.hpp"
#include "sinew/dist/strategy_spec.hpp"
#include "sinew/dist/sync_mode.hpp"
#include "sinew/metrics/timer.hpp"
#include "sinew/optim/optimizer_spec.hpp"

namespace sinew::dist {

/// Comm: the communicator whose allreduce_sum combines the gradients (comm::Mpi).
template <Communicator Comm>
class MpiAllReduce : public detail::allreduce_base<Comm> {
 public:
  static constexpr std::string_view kName = "mpi_allreduce";

  struct options {
    /// Free text every rank must agree on (batch size, data set ...), checked by start() with the parameter
    /// count and the optimizer.
    std::string configuration;
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

  MpiAllReduce() = default;
  explicit MpiAllReduce(options o, Comm comm = Comm())
      : detail::allreduce_base<Comm>(std::move(comm)), options_(std::move(o)) {}

  /// Collective: checks that every rank runs the same configuration (else comm_error naming the first rank
  /// that differs), then gives every rank rank 0's parameters.
  template <SyncMode M, Optimizer O>
  void start(std::span<float> params, O&) {
    static_assert(sizeof(mode<M>) > 0);
    detail::agree_and_broadcast<Comm, O>(this->comm_, params, "dist::MpiAllReduce", options_.configuration);
  }

  /// Collective: params -= optimizer(mean of every rank's grads). grads holds the mean afterwards.
  template <SyncMode M, Optimizer O>
  void update(std::span<float> params, std::span<float> grads, O& optimizer, metrics::PhaseSeconds& phases) {
    static_assert(sizeof(mode<M>) > 0);
    this->average_and_step(params, grads, optimizer, phases,
                           [this](std::span<float> g) { this->comm_.allreduce_sum(g); });
  }

 private:
  options options_;
};

static_assert(Strategy<MpiAllReduce<comm::example::single_process>>);

}  // namespace sinew::dist
