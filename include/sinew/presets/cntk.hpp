// sinew/presets/cntk.hpp: Microsoft CNTK with 1-bit SGD, as sinew policies.
//
//   using CN = sinew::presets::CNTK<sinew::nets::ResNet50<>>;
//   CN::trainer_type trainer({}, {.lr = 0.01f}, CN::strategy_type(CN::options()));
//   using AsMeasured = CN::without_one_bit;  // the usability paper's CNTK: plain MPI all-reduce
//
// Every choice and the sentence it comes from (Liu et al., "Usability Study of Distributed Deep Learning
// Frameworks for Convolutional Neural Networks", KDD 2018 DL Day; Seide et al., "1-Bit Stochastic Gradient
// Descent and its Application to Data-Parallel Distributed Training of Speech DNNs", Interspeech 2014), or that
// it is ours. The CPU-cluster paper (Krisilias et al. 2021) did not run CNTK.
//
//   choice                sinew                               the source
//   --------------------  ----------------------------------  ---------------------------------------------------------
//   strategy              dist::MpiAllReduce<Comm>, Sync      usability 3.3.2: "CNTK is built for distributed deep
//                         only                                learning. There is no additional setup needed, except MPI
//                                                             is required to run the distributed training."
//   1-bit SGD             dist::Compressed<..., compress::    usability 4.6.2: "CNTK also provided non-commercial
//                         OneBit>                             licensed 1-bit SGD, which accelerate the synchronization
//                                                             [17]." Seide et al.: "quantize the gradients aggressively
//                                                             -- to but one bit per value -- if the quantization error
//                                                             is carried forward across minibatches (error feedback)"
//   per-column scales     each column decodes to the mean of  Seide et al.: reconstruction values per column, chosen to
//                         its values >= 0 or of those < 0     minimise the squared quantisation error
//   one exchange after    bucket_bytes 0, overlap off         not from the papers: the compressor runs once backward
//   backward                                                  is done
//   operators             backend::OneDnn                     not from the papers
//   loader                data::CachedLoader                  not from the papers: the usability paper's multi-node
//                                                             runs read "the synthetic Cifar-10 dataset" (4.6.2)
//   optimizer             optim::Sgd                          not from the papers
//
// What sinew does not do as CNTK did: the usability paper measured CNTK without 1-bit SGD ("we do not include
// it in the analysis due to the limited usability"); without_one_bit is that configuration. CNTK exchanged the
// quantised gradients in stripes, each aggregated and re-quantised by one rank (as we read its aggregator);
// sinew all-gathers every rank's payload and decodes it everywhere (dist/compressed.hpp says why and what it
// costs beyond 2 ranks).
#pragma once

#include "sinew/backend/onednn.hpp"
#include "sinew/comm/mpi.hpp"
#include "sinew/compress/one_bit.hpp"
#include "sinew/data/cached_loader.hpp"
#include "sinew/data/dataset.hpp"
#include "sinew/data/loader_options.hpp"
#include "sinew/dist/compressed.hpp"
#include "sinew/dist/mpi_allreduce.hpp"
#include "sinew/optim/sgd.hpp"
#include "sinew/presets/chainermn.hpp"
#include "sinew/presets/preset.hpp"

namespace sinew::presets {

/// CNTK with 1-bit SGD (see the table at the top of presets/cntk.hpp): MPI all-reduce's start-up and
/// statistics, every gradient sent as one bit a value with per-column scales and error feedback. Comm: comm::Mpi.
template <NetworkPolicy Net, CommunicatorPolicy Comm = comm::Mpi>
struct CNTK : Preset<Net, backend::OneDnn, dist::Compressed<dist::MpiAllReduce<Comm>, compress::OneBit>, Sync,
                     optim::Sgd, data::CachedLoader> {
  /// The usability paper's CNTK: the same Trainer with plain MPI all-reduce (no 1-bit SGD), which is
  /// ChainerMN's configuration.
  using without_one_bit = typename ChainerMN<Net, Comm>::trainer_type;

  /// The wrapped MPI all-reduce's options, ChainerMN's: nothing is all-reduced during backward.
  static typename dist::MpiAllReduce<Comm>::options options() { return ChainerMN<Net, Comm>::options(); }
};

}  // namespace sinew::presets
