// bench/scaling/configs.hpp: the distribution configurations that bench/paper/scaling.py and
// bench/paper/time_to_accuracy.py compare, each a strategy and a sync mode, chosen by name at run time.
#pragma once

#include <string>
#include <vector>

#include "sinew/sinew.hpp"

namespace sinew::bench::scaling {

using Mpi    = comm::Mpi;
using Ring   = dist::RingAllReduce<Mpi>;          // synchronous all-reduce, bucketed, overlapped with backward
using Server = dist::ParameterServer<Mpi, 1>;     // the last rank serves: workers = ranks - 1

/// Every configuration's name, as the scripts pass it with --config.
inline const std::vector<std::string> kConfigs = {"allreduce-sync", "ps-sync", "ps-async", "ps-stale2"};

/// Calls f.template operator()<Strategy, Mode>() for the configuration named `config` (one of kConfigs).
template <class F>
int with_config(const std::string& config, F&& f) {
  if (config == "allreduce-sync") return f.template operator()<Ring, Sync>();
  if (config == "ps-sync") return f.template operator()<Server, Sync>();
  if (config == "ps-async") return f.template operator()<Server, Async>();
  return f.template operator()<Server, BoundedStaleness<2>>();  // "ps-stale2": the command line checked the name
}

/// The ring with compressed gradients (dist::Compressed), for comparing accuracy after the same epochs
/// (time_to_accuracy, LeNet-5 only: each is one more trainer to compile).
inline const std::vector<std::string> kCompressedConfigs = {"allreduce-fp16", "allreduce-bf16", "allreduce-onebit",
                                                            "allreduce-powersgd4"};

/// Calls f.template operator()<Strategy, Sync>() for the compressed configuration named `config`.
template <class F>
int with_compressed_config(const std::string& config, F&& f) {
  if (config == "allreduce-fp16") return f.template operator()<dist::Compressed<Ring, compress::Fp16>, Sync>();
  if (config == "allreduce-bf16") return f.template operator()<dist::Compressed<Ring, compress::Bf16>, Sync>();
  if (config == "allreduce-onebit") return f.template operator()<dist::Compressed<Ring, compress::OneBit>, Sync>();
  return f.template operator()<dist::Compressed<Ring, compress::PowerSgd<4>>, Sync>();  // allreduce-powersgd4
}

/// The configuration's description, for printed lines and JSON.
inline std::string describe(const std::string& config) {
  if (config == "allreduce-fp16") return "ring all-reduce, sync, fp16 gradients";
  if (config == "allreduce-bf16") return "ring all-reduce, sync, bf16 gradients";
  if (config == "allreduce-onebit") return "ring all-reduce, sync, 1-bit SGD";
  if (config == "allreduce-powersgd4") return "ring all-reduce, sync, PowerSGD rank 4";
  if (config == "allreduce-sync") return "ring all-reduce, sync";
  if (config == "ps-sync") return "parameter server, sync";
  if (config == "ps-async") return "parameter server, async";
  return "parameter server, bounded staleness 2";
}

}  // namespace sinew::bench::scaling
