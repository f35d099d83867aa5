// sinew/presets/pytorch.hpp: PyTorch 1.7 with DistributedDataParallel as the paper ran it, as sinew policies.
//
//   using PT = sinew::presets::PyTorch<sinew::nets::ResNet18<>>;
//   PT::trainer_type trainer({}, {.lr = 0.01f}, PT::strategy_type(PT::options()));
//   auto loader = PT::loader(sinew::data::cifar10_records(dir, {...}), {.batch_size = 42}, trainer.dist());
//
// Every choice and the sentence of Krisilias et al., "A Performance Evaluation of Distributed Deep Learning
// Frameworks on CPU Clusters Using Image Classification Workloads" (2021), it comes from:
//
//   choice                sinew                               the paper
//   --------------------  ----------------------------------  ---------------------------------------------------------
//   operators             backend::OneDnn                     III-B: "Linear algebra operations are performed using
//                                                             oneDNN [28] library, which is optimized for Intel
//                                                             Processors."
//   strategy              dist::RingAllReduce<Comm>, Sync     III-B: "PyTorch distributed execution relies on the
//                         only                                all-reduce training type, supporting synchronous
//                                                             training."
//   buckets, overlap      bucket_bytes 25 MiB, overlap on     III-B: "PyTorch groups the gradients in buckets from the
//                                                             network's output to the top and when all the gradients in
//                                                             a bucket have been computed, the all-reduce process is
//                                                             initiated for this bucket in the form of Ring-Reduce."
//                                                             The size is not the paper's: DDP's default bucket_cap_mb
//                                                             = 25
//   one worker per        as many ranks as machines           IV-A: "For All-Reduce training setups we deploy one
//   machine                                                   worker task on each machine."
//   loader                data::StreamingLoader<Source>,      III-B: "PyTorch offers *DataLoader* which reads data in
//                         worker threads                      the form of mini-batches in parallel with the training."
//   no cache              every batch read from its files     III-B: "No caching mechanism is available in the
//                                                             *DataLoader* mechanism."
//   optimizer             optim::Sgd                          not from the paper (it names no optimizer)
//   loader threads        StreamingOptions' defaults (2       not from the paper (it gives no num_workers)
//                         workers, 2 batches ahead)
//
// What sinew does not do as PyTorch did: DDP's first bucket is smaller (1 MiB) than the others; sinew's are
// all 25 MiB. Communication is MPI, not Gloo. PyTorch 1.7's CPU batch_norm was its own kernel, not oneDNN's.
#pragma once

#include <cstddef>
#include <utility>

#include "sinew/backend/onednn.hpp"
#include "sinew/comm/mpi.hpp"
#include "sinew/data/cifar_records.hpp"
#include "sinew/data/loader_options.hpp"
#include "sinew/data/streaming_loader.hpp"
#include "sinew/dist/ring_allreduce.hpp"
#include "sinew/optim/sgd.hpp"
#include "sinew/presets/preset.hpp"

namespace sinew::presets {

/// DistributedDataParallel's default bucket: bucket_cap_mb = 25 (MiB).
inline constexpr std::size_t kDdpBucketBytes = std::size_t(25) << 20;

/// PyTorch 1.7 with DistributedDataParallel as the paper ran it (see the table at the top of
/// presets/pytorch.hpp). Synchronous only. Source: the record source the streaming loader reads
/// (data::CifarRecords, data::IdxRecords, data::ImageFolder); Comm: comm::Mpi.
template <NetworkPolicy Net, class Source = data::CifarRecords, CommunicatorPolicy Comm = comm::Mpi>
struct PyTorch : Preset<Net, backend::OneDnn, dist::RingAllReduce<Comm>, Sync, optim::Sgd,
                        data::StreamingLoader<Source>> {
  /// The ring's options: 25 MiB buckets from the output layer back, each all-reduced during backward.
  static typename dist::RingAllReduce<Comm>::options options() {
    typename dist::RingAllReduce<Comm>::options o;
    o.bucket_bytes = kDdpBucketBytes;
    o.overlap = true;
    return o;
  }
};

}  // namespace sinew::presets
