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

/// The configuration's description, for printed lines and JSON.
inline std::string describe(const std::string& config) {
  if (config == "allreduce-sync") return "ring all-reduce, sync";
  if (config == "ps-sync") return "parameter server, sync";
  if (config == "ps-async") return "parameter server, async";
  return "parameter server, bounded staleness 2";
}

}  // namespace sinew::bench::scaling
