// sinew/presets/mxnet.hpp: MXNet 1.7 with its distributed KVStore as the paper ran it, as sinew policies.
//
//   using MX = sinew::presets::MXNet<sinew::nets::ResNet18<>, sinew::Async>;     // or sinew::Sync
//   MX::trainer_type trainer({}, {.lr = 0.01f}, MX::strategy_type(MX::options()));
//   auto loader = MX::loader(sinew::data::cifar10_records(dir, {...}), {.batch_size = 42}, trainer.dist());
//   // mpirun -np 6 --map-by node over 3 hosts: ranks 0-2 are the workers, 3-5 the servers, one of each a host
//
// Every choice and the sentence of Krisilias et al., "A Performance Evaluation of Distributed Deep Learning
// Frameworks on CPU Clusters Using Image Classification Workloads" (2021), it comes from:
//
//   choice                sinew                               the paper
//   --------------------  ----------------------------------  ---------------------------------------------------------
//   operators             backend::OneDnn                     III-C: "MXNet uses the same library as PyTorch for linear
//                                                             algebra operations, the oneDNN."
//   strategy              dist::ParameterServer<Comm,         III-C: "Apache MXNet adopts the parameter server
//                         Machines>, Sync or Async            architecture to provide both synchronous and asynchronous
//                                                             training."
//   aggregation on the    the servers average and step        III-C: "Parameter servers are responsible to handle
//   servers                                                   synchronization issues. KVStore is also responsible to
//                                                             handle gradient aggregation."
//   one server with each  Machines servers and Machines       IV-A: "When training under the parameter server
//   worker                workers; worker i and server i on   architecture, both a parameter server and a worker task
//                         host i                              are executed on each virtual machine."
//   loader                data::StreamingLoader<Source>       III-C: "MXNet provides built-in data loading modules,
//                                                             which are able to operate in parallel with training";
//                                                             Table I: "Pipeline, No caching"
//   no cache              every batch read from its files     V-G: "TensorFlow uses caching, while PyTorch and MXNet
//                                                             take the second approach"
//   optimizer             optim::Sgd                          not from the paper (it names no optimizer)
//
// What sinew does not do as MXNet did: a server and a worker are two MPI ranks, so "colocated" is where
// mpirun places them (ranks 0 .. Machines-1 train, Machines .. 2 Machines-1 serve: `--map-by node` puts worker
// i and server i on host i); sinew cannot check the placement. No scheduler task (MPI starts the ranks), and
// the transport is MPI, not MXNet's own RPC.
#pragma once

#include <utility>

#include "sinew/backend/onednn.hpp"
#include "sinew/comm/mpi.hpp"
#include "sinew/core/diagnostics.hpp"
#include "sinew/data/cifar_records.hpp"
#include "sinew/data/loader_options.hpp"
#include "sinew/data/streaming_loader.hpp"
#include "sinew/dist/parameter_server.hpp"
#include "sinew/optim/sgd.hpp"
#include "sinew/presets/preset.hpp"

namespace sinew::presets {

namespace detail {
template <class Mode>
struct mxnet_mode {
  static_assert(dependent_false<Mode>,
                "presets::MXNet<Net, Mode>: MXNet's KVStore trains Sync (dist_sync) or Async (dist_async), "
                "nothing else; for BoundedStaleness<K> write the Trainer out with dist::ParameterServer");
};
template <>
struct mxnet_mode<Sync> {
  using type = Sync;
};
template <>
struct mxnet_mode<Async> {
  using type = Async;
};
}  // namespace detail

/// MXNet 1.7 with its distributed KVStore as the paper ran it (see the table at the top of presets/mxnet.hpp).
/// Mode: Sync or Async. Machines: the hosts, each running one worker and one server (2 x Machines ranks).
/// Source: the record source the streaming loader reads; Comm: comm::Mpi.
template <NetworkPolicy Net, class Mode, int Machines = 3, class Source = data::CifarRecords,
          CommunicatorPolicy Comm = comm::Mpi>
struct MXNet : Preset<Net, backend::OneDnn, dist::ParameterServer<Comm, Machines>,
                      typename detail::mxnet_mode<Mode>::type, optim::Sgd, data::StreamingLoader<Source>> {
  /// The ranks of the job: one worker and one server on each machine.
  static constexpr int kRanks = 2 * Machines;

  /// The parameter server's options (its defaults).
  static typename dist::ParameterServer<Comm, Machines>::options options() { return {}; }
};

}  // namespace sinew::presets
