// sinew/dist/strategy_spec.hpp: what a distribution strategy must provide.
//
// Contract. A strategy S decides how the gradients of all workers become one update of the parameters.
// The trainer owns the model and the optimizer; the strategy owns everything that crosses processes.
//   S::kName                        "local", "ring_allreduce", ... for reports.
//   S::template mode<M>             instantiable only for a sync mode M that S supports; for any other the
//                                   primary template fails with a sentence (the trainer instantiates it).
//   s.rank(), s.world_size()        this process and the number of processes;
//   s.is_worker()                   whether this process trains (parameter-server servers do not);
//   s.workers(), s.worker_index()   the number of training processes and this one's index among them
//                                   (for sharding data);
//   s.template start<M>(params, o)  once before training: makes every worker start from the same parameters
//                                   (rank 0's) and checks that all agree on the configuration;
//   s.template update<M>(params, grads, optimizer, phases)
//                                   after backward: combines gradients as M says and updates params, adding
//                                   the exposed and hidden communication and the update time to phases.
// Optional: s.all_agree(bool) -> bool, true when the flag holds on every rank; the trainer asks it before
// acting on a NaN loss so that all ranks stop together (none waits in a collective). The all-reduce strategies
// make it a collective; dist::ParameterServer, whose servers do not train, sends a false to its servers, which
// tell every other worker at its next exchange (see parameter_server.hpp).
// Optional, for strategies with ranks that do not train (dist::ParameterServer):
//   s.template serve<M>(params, phases) -> std::size_t
//                                   on a rank with is_worker() false, Trainer::train_epoch calls this instead of
//                                   training: it serves the workers' epoch and returns its optimizer steps;
//   s.template finish_epoch<M>(params, phases)
//                                   on a worker, after its epoch's last step (the end of epoch for the servers).
// S may also offer hooks that let communication overlap backward; the trainer uses them when present.
#pragma once

#include <concepts>
#include <span>
#include <string_view>

#include "sinew/dist/sync_mode.hpp"
#include "sinew/metrics/timer.hpp"
#include "sinew/optim/optimizer_spec.hpp"

namespace sinew {

namespace req {
template <class S>
concept has_strategy_name = requires {
  { S::kName } -> std::convertible_to<std::string_view>;
};
template <class S>
concept has_topology = requires(const S& s) {
  { s.rank() } -> std::convertible_to<int>;
  { s.world_size() } -> std::convertible_to<int>;
  { s.is_worker() } -> std::convertible_to<bool>;
  { s.workers() } -> std::convertible_to<int>;
  { s.worker_index() } -> std::convertible_to<int>;
};
template <class S>
concept has_sync_update = requires(S& s, std::span<float> p, optim::example::descent& o, metrics::PhaseSeconds& t) {
  { s.template start<Sync>(p, o) };
  { s.template update<Sync>(p, p, o, t) };
};
}  // namespace req

/// A distribution strategy policy (the Trainer's third slot).
template <class S>
concept Strategy = req::has_strategy_name<S> && req::has_topology<S> && req::has_sync_update<S>;

}  // namespace sinew
