// sinew/presets.hpp: named configurations of whole systems, each a sinew::Trainer spelled by its policies.
//
//   presets::TensorFlow<Net, Sync | Async>   Eigen; ring all-reduce, or parameter servers; caching loader
//   presets::PyTorch<Net>                    oneDNN; 25 MiB buckets all-reduced during backward; streaming loader
//   presets::MXNet<Net, Sync | Async>        oneDNN; a parameter server beside each worker; streaming loader
//   presets::ChainerMN<Net>                  oneDNN; MPI all-reduce
//   presets::CNTK<Net>                       oneDNN; MPI all-reduce with 1-bit SGD (compress::OneBit)
//
// Each header's comment maps every choice to the sentence of the paper it comes from, and says what sinew does
// not do as the system did. A preset is only names (presets/preset.hpp): trainer_type is a plain Trainer, and
// with_backend<...> and the other with_* swap one policy.
#pragma once

#include "sinew/presets/chainermn.hpp"
#include "sinew/presets/cntk.hpp"
#include "sinew/presets/mxnet.hpp"
#include "sinew/presets/preset.hpp"
#include "sinew/presets/pytorch.hpp"
#include "sinew/presets/tensorflow.hpp"
