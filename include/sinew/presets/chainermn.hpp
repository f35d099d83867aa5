// sinew/presets/chainermn.hpp: Chainer with ChainerMN, as the usability paper ran it, as sinew policies.
//
//   using CM = sinew::presets::ChainerMN<sinew::nets::ResNet50<>>;
//   CM::trainer_type trainer({}, {.lr = 0.01f}, CM::strategy_type(CM::options()));
//
// Every choice and the sentence it comes from (Liu et al., "Usability Study of Distributed Deep Learning
// Frameworks for Convolutional Neural Networks", KDD 2018 DL Day, section 3.3.2), or that it is ours:
//
//   choice                sinew                               the source
//   --------------------  ----------------------------------  ---------------------------------------------------------
//   strategy              dist::MpiAllReduce<Comm>, Sync      "for the distributed version, the ChainerMN package and
//                         only                                Message Passing Interface (MPI) are required."
//   one all-reduce after  bucket_bytes 0, overlap off         not from the paper: ChainerMN's multi-node optimizer
//   backward                                                  all-reduces the gradients, packed, once backward is done
//   operators             backend::OneDnn                     not from the paper: Chainer's CPU path is iDeep, built on
//                                                             MKL-DNN (now oneDNN)
//   loader                data::CachedLoader                  not from the paper: Chainer's iterators walk a dataset
//                                                             held in memory
//   optimizer             optim::Sgd                          not from the paper
#pragma once

#include "sinew/backend/onednn.hpp"
#include "sinew/comm/mpi.hpp"
#include "sinew/data/cached_loader.hpp"
#include "sinew/data/dataset.hpp"
#include "sinew/data/loader_options.hpp"
#include "sinew/dist/mpi_allreduce.hpp"
#include "sinew/optim/sgd.hpp"
#include "sinew/presets/preset.hpp"

namespace sinew::presets {

/// Chainer with ChainerMN (see the table at the top of presets/chainermn.hpp): MPI all-reduce, synchronous.
/// Comm: comm::Mpi.
template <NetworkPolicy Net, CommunicatorPolicy Comm = comm::Mpi>
struct ChainerMN : Preset<Net, backend::OneDnn, dist::MpiAllReduce<Comm>, Sync, optim::Sgd, data::CachedLoader> {
  /// MPI_Allreduce of every gradient at once, after backward.
  static typename dist::MpiAllReduce<Comm>::options options() {
    typename dist::MpiAllReduce<Comm>::options o;
    o.bucket_bytes = 0;
    o.overlap = false;
    return o;
  }
};

}  // namespace sinew::presets
