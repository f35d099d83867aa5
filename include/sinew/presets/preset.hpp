// sinew/presets/preset.hpp: what every system preset is made of (presets/tensorflow.hpp, pytorch.hpp, ...).
//
//   using TF = sinew::presets::TensorFlow<sinew::nets::LeNet5<>, sinew::Sync>;
//   using T  = TF::trainer_type;                            // a plain sinew::Trainer<...>, nothing more
//   using T2 = TF::with_backend<sinew::backend::OneDnn>;    // the same Trainer with oneDNN's operators
//
// A preset is only names: trainer_type is the Trainer a hand-written program would spell out, and each
// with_* swaps one policy and is again that hand-written Trainer (tests/presets/test_presets.cpp checks both
// with std::is_same_v). What a system chooses beyond the policy types (its strategy's options, its loader's
// options) each preset gives as static functions that return ordinary option structs.
#pragma once

#include <utility>

#include "sinew/backend/backend_spec.hpp"
#include "sinew/data/loader_options.hpp"
#include "sinew/data/loader_spec.hpp"
#include "sinew/dist/strategy_spec.hpp"
#include "sinew/dist/sync_mode.hpp"
#include "sinew/metrics/profile.hpp"
#include "sinew/nets/network_spec.hpp"
#include "sinew/optim/optimizer_spec.hpp"
#include "sinew/trainer.hpp"

namespace sinew::presets {

/// The policies of one system's Trainer (Net, B, S, M, O, L as Trainer takes them), and that Trainer with one
/// policy swapped. Every alias here is a plain sinew::Trainer.
template <NetworkPolicy Net, BackendPolicy B, StrategyPolicy S, SyncModePolicy M, OptimizerPolicy O, data::LoaderPolicy L>
struct Preset {
  /// The system's Trainer, as a program would write it out.
  using trainer_type = Trainer<Net, B, S, M, O, L>;
  using network = Net;        ///< the network, a type
  using backend = B;          ///< the operator library
  using strategy_type = S;    ///< how gradients are combined
  using sync_mode = M;        ///< how workers wait for each other
  using optimizer_type = O;   ///< the update rule
  using loader_type = L;      ///< how batches are read

  /// The same Trainer with another operator library (to ask which of a system's differences is its operators).
  template <BackendPolicy B2>
  using with_backend = Trainer<Net, B2, S, M, O, L>;
  /// The same Trainer with another strategy (how gradients are combined).
  template <StrategyPolicy S2>
  using with_strategy = Trainer<Net, B, S2, M, O, L>;
  /// The same Trainer in another sync mode (the strategy must run it: its own sentence says so otherwise).
  template <SyncModePolicy M2>
  using with_mode = Trainer<Net, B, S, M2, O, L>;
  /// The same Trainer with another update rule.
  template <OptimizerPolicy O2>
  using with_optimizer = Trainer<Net, B, S, M, O2, L>;
  /// The same Trainer with another loader (caching against streaming).
  template <data::LoaderPolicy L2>
  using with_loader = Trainer<Net, B, S, M, O, L2>;
  /// The same Trainer timing every operator (metrics::OperatorProfile).
  template <class Profile>
  using with_profile = Trainer<Net, B, S, M, O, L, Profile>;

  /// `base` (batch size, seed, padding ...) as this worker's loader reads it: its share of every epoch (a
  /// preset whose system reads otherwise, TensorFlow's Async, says so with its own loader_options).
  static data::LoaderOptions loader_options(data::LoaderOptions base, int worker_index, int workers) {
    base.rank = worker_index;
    base.world_size = workers;
    base.sharding = data::Sharding::disjoint;
    return base;
  }

  /// This worker's loader (dist: the trainer's strategy, trainer.dist()), built from `source` (a record source
  /// for a streaming loader, a data::Dataset for a caching one), loader_options(base, ...) and `extra` (for
  /// example a streaming loader's data::StreamingOptions).
  template <class Dist, class Source, class... Extra>
  static L loader(Source&& source, data::LoaderOptions base, const Dist& dist, Extra&&... extra) {
    return L(std::forward<Source>(source), loader_options(std::move(base), dist.worker_index(), dist.workers()),
             std::forward<Extra>(extra)...);
  }
};

}  // namespace sinew::presets
