// sinew/io/run_state.hpp: a training run as a plain value, what a checkpoint holds.
//
// The trainer fills a RunState with its counters and views of its storage (parameters, buffers, the named
// state of its optimizer and strategy); io::save_run writes it and io::load_run reads a checkpoint back into
// it (io/checkpoint.hpp). Nothing here knows a trainer: the format is io's, the training loop the trainer's.
#pragma once

#include <cxxabi.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "sinew/core/named_state.hpp"

namespace sinew::io {

/// "Trainer<net, backend, strategy, mode, optimizer>" from the type's parts, as checkpoints and their errors
/// name a trainer.
inline std::string trainer_type_name(const std::vector<std::pair<std::string, std::string>>& parts) {
  std::string s = "Trainer<";
  for (std::size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : "") + parts[i].second;
  return s + ">";
}

/// What a checkpoint records of the loader: a resumed run must read the same batches.
struct LoaderFacts {
  /// the loader's batch size and batches per epoch (0: none trained yet, or not to be checked)
  /// @{
  std::uint64_t batch_size = 0, batches_per_epoch = 0;
  /// @}
  /// its shuffle seed, where it has one
  std::optional<std::uint64_t> shuffle_seed;
};

/// Where a rank stands in its job: ranks [0, workers) train, the ranks after them serve (a parameter
/// server's servers, whose number the strategy's type fixes).
struct RankFacts {
  /// this rank, the number of ranks, and how many of them train
  /// @{
  int rank = 0, world_size = 1, workers = 1;
  /// @}
  /// whether this rank trains
  bool is_worker() const noexcept { return rank < workers; }
  /// the ranks that serve
  int servers() const noexcept { return world_size - workers; }
};

/// A training run: what save_run writes and load_run restores (see the file comment).
struct RunState {
  /// The trainer's type, part by part, in this order: network, backend, strategy, sync_mode, optimizer.
  std::vector<std::pair<std::string, std::string>> type;
  std::string network_layout;  ///< input shape, lowered nodes and parameter count: what must match
  std::uint64_t seed = 0;      ///< TrainerOptions::seed (initialisation and dropout masks)
  std::uint64_t accumulate = 1;  ///< TrainerOptions::accumulate: batches per step
  /// training steps done, the epoch the next train_epoch trains, and the batches of it already trained
  /// @{
  std::uint64_t step = 0, epoch = 0, batches_done = 0;
  /// @}
  LoaderFacts loader;          ///< the loader the run trained with last
  RankFacts ranks;             ///< this rank's place in the job (not saved: the checkpoint records the world size)
  /// the model's flat parameters and buffers (BatchNorm statistics)
  /// @{
  std::span<float> parameters, buffers;
  /// @}
  std::uint64_t model_step = 0;  ///< the model's dropout step
  /// State of the optimizer, the strategy, ..., each under its prefix ("optimizer.", "shard.", "compressor.").
  std::vector<std::pair<std::string, NamedState>> sections;

  /// The section with prefix `prefix` (nullptr if there is none).
  NamedState* section(const std::string& prefix) {
    for (auto& [p, s] : sections)
      if (p == prefix) return &s;
    return nullptr;
  }
  /// "Trainer<net, backend, strategy, mode, optimizer>".
  std::string type_name() const { return trainer_type_name(type); }
};

/// T's name as checkpoints record it: sinew::nets::LeNet5<sinew::Input<1, 32, 32> > -> LeNet5<Input<1,32,32>>,
/// the same from GCC and Clang.
template <class T>
std::string type_part_name() {
  int status = 0;
  char* d = abi::__cxa_demangle(typeid(T).name(), nullptr, nullptr, &status);
  std::string name = status == 0 && d ? d : typeid(T).name();
  std::free(d);
  for (const char* prefix : {"sinew::nets::", "sinew::backend::", "sinew::dist::", "sinew::optim::", "sinew::comm::",
                             "sinew::"})
    for (std::size_t at; (at = name.find(prefix)) != std::string::npos;) name.erase(at, std::strlen(prefix));
  std::erase(name, ' ');
  return name;
}

}  // namespace sinew::io
