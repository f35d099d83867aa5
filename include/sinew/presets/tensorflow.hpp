// sinew/presets/tensorflow.hpp: TensorFlow 2.5 as the paper ran it, as sinew policies.
//
//   using TF = sinew::presets::TensorFlow<sinew::nets::ResNet18<>, sinew::Sync>;   // or sinew::Async
//   TF::trainer_type trainer({}, {.lr = 0.01f}, TF::strategy_type(TF::options()));
//   auto loader = TF::loader(train_set, {.batch_size = 42}, trainer.dist());
//   for (int e = 0; e < 10; ++e) trainer.train_epoch(loader, TF::steps_per_epoch(loader, trainer.dist().workers()));
//
// Every choice and the sentence of Krisilias et al., "A Performance Evaluation of Distributed Deep Learning
// Frameworks on CPU Clusters Using Image Classification Workloads" (2021), it comes from:
//
//   choice                sinew                               the paper
//   --------------------  ----------------------------------  ---------------------------------------------------------
//   operators             backend::Eigen                      III-A: "TensorFlow facilitates the Eigen [26] library."
//   Sync                  dist::RingAllReduce<Comm>           III-A: "Synchronous training is performed using an
//                                                             all-reduce variant called Ring-Reduce [10]."
//   Async                 dist::ParameterServer<Comm,         III-A: "Asynchronous training can be achieved under the
//                         Machines>                           parameter server architecture."
//   servers               Machines servers, one per machine   IV-A: "When training under the parameter server
//                                                             architecture, both a parameter server and a worker task
//                                                             are executed on each virtual machine."
//   Sync data             Sharding::disjoint                  III-A: "Synchronous TensorFlow requires each worker to
//                                                             read only the shard assigned to them."
//   Async data            Sharding::every_worker_reads_all,   III-A: "In the case of asynchronous TensorFlow, according
//                         an epoch of batches / workers       to the official tutorial [25], each worker reads the
//                         steps                               whole dataset, as opposed to the synchronous case, but
//                                                             processes only the one third in each epoch."
//   loader                data::CachedLoader                  Table I: "Pipeline, Caching"; V-G: "TensorFlow uses
//                                                             caching, while PyTorch and MXNet take the second
//                                                             approach"
//   optimizer             optim::Sgd                          not from the paper (it names no optimizer)
//   ring buckets          one all-reduce after backward       not from the paper: our reading of Keras with
//                         (bucket_bytes 0, overlap off)       MultiWorkerMirroredStrategy, which all-reduces the
//                                                             gradients once they are all computed
//
// What sinew does not do as TensorFlow did (a reproduction must say so):
// - Sync: TensorFlow "loads into memory the part of the dataset that assigned to them (one third in our case)
//   and processes the same subset of data throughout the training" (V-B). data::CachedLoader converts the
//   whole dataset on every rank and deals new shares every epoch, so sinew's synchronous TensorFlow loads as
//   much as its asynchronous one: the paper's "2.9X" reading overhead of asynchronous TensorFlow has no cause
//   here. A loader that caches only a fixed shard would give it one; none exists yet.
// - Async: the paper's workers process "the batch routed by the coordinator"; sinew's workers each walk their
//   own permutation of the whole dataset and stop after batches / workers steps (steps_per_epoch), so two
//   workers may train on the same sample in one epoch, and some sample on none.
// - Communication is MPI, not gRPC.
#pragma once

#include <concepts>
#include <cstddef>
#include <utility>

#include "sinew/backend/eigen.hpp"
#include "sinew/comm/mpi.hpp"
#include "sinew/core/diagnostics.hpp"
#include "sinew/data/cached_loader.hpp"
#include "sinew/data/dataset.hpp"
#include "sinew/data/loader_options.hpp"
#include "sinew/dist/parameter_server.hpp"
#include "sinew/dist/ring_allreduce.hpp"
#include "sinew/optim/sgd.hpp"
#include "sinew/presets/preset.hpp"

namespace sinew::presets {

namespace detail {
template <class Mode, int Machines, class Comm>
struct tensorflow_strategy {
  static_assert(dependent_false<Mode>,
                "presets::TensorFlow<Net, Mode>: TensorFlow trains Sync (ring all-reduce) or Async (parameter "
                "server), nothing else; for BoundedStaleness<K> write the Trainer out with dist::ParameterServer");
};
template <int Machines, class Comm>
struct tensorflow_strategy<Sync, Machines, Comm> {
  using type = dist::RingAllReduce<Comm>;
};
template <int Machines, class Comm>
struct tensorflow_strategy<Async, Machines, Comm> {
  using type = dist::ParameterServer<Comm, Machines>;
};
}  // namespace detail

/// TensorFlow 2.5 as the paper ran it (see the table at the top of presets/tensorflow.hpp). Mode: Sync or
/// Async. Machines: the hosts, each running one worker and, in Async, one parameter server too (run
/// 2 x Machines ranks, `mpirun --map-by node` so that worker i and server i share host i); Comm: comm::Mpi.
template <NetworkPolicy Net, class Mode, int Machines = 3, CommunicatorPolicy Comm = comm::Mpi>
struct TensorFlow : Preset<Net, backend::Eigen, typename detail::tensorflow_strategy<Mode, Machines, Comm>::type,
                           Mode, optim::Sgd, data::CachedLoader> {
  /// The strategy's options: one all-reduce after backward (Sync); the defaults of dist::ParameterServer (Async).
  static typename TensorFlow::strategy_type::options options() {
    typename TensorFlow::strategy_type::options o;
    if constexpr (std::same_as<Mode, Sync>) {
      o.bucket_bytes = 0;
      o.overlap = false;
    }
    return o;
  }

  /// `base` (batch size, seed, padding ...) as this worker's loader reads it: Sync, its share of every epoch;
  /// Async, the whole dataset in its own order.
  static data::LoaderOptions loader_options(data::LoaderOptions base, int worker_index, int workers) {
    base.rank = worker_index;
    base.world_size = workers;
    base.sharding = std::same_as<Mode, Sync> ? data::Sharding::disjoint : data::Sharding::every_worker_reads_all;
    return base;
  }

  /// This worker's caching loader over `data` (dist: the trainer's strategy, trainer.dist()).
  template <class Dist>
  static data::CachedLoader loader(const data::Dataset& data, data::LoaderOptions base, const Dist& dist) {
    return data::CachedLoader(data, loader_options(std::move(base), dist.worker_index(), dist.workers()));
  }

  /// The steps of one of the paper's epochs, train_epoch's max_steps: the loader's whole epoch (Sync); a
  /// workers-th of it, rounded up (Async: each worker reads everything but "processes only the one third").
  static std::size_t steps_per_epoch(const data::CachedLoader& loader, int workers) {
    const std::size_t batches = loader.batches_per_epoch();
    if constexpr (std::same_as<Mode, Sync>) return batches;
    return (batches + std::size_t(workers) - 1) / std::size_t(workers);
  }
};

}  // namespace sinew::presets
