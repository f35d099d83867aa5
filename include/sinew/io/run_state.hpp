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
#include <string_view>
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

namespace detail {
/// The characters of a demangled string literal argument, from after "{char[N]{" to the closing "}}":
/// GCC writes Named<"conv1", L>'s "conv1" as fixed_string<6ul>{char[6]{(char)99,(char)111,...}} (zeros at the
/// end may be left out). Returns false for anything else.
inline bool decode_char_list(std::string_view list, std::string& out) {
  out.clear();
  while (!list.empty()) {
    if (list.front() == ',') {
      list.remove_prefix(1);
      continue;
    }
    if (!list.starts_with("(char)")) return false;
    list.remove_prefix(6);
    std::size_t digits = 0;
    int value = 0;
    while (digits < list.size() && list[digits] >= '0' && list[digits] <= '9')
      value = value * 10 + (list[digits++] - '0');
    if (digits == 0 || value > 127) return false;
    list.remove_prefix(digits);
    if (value == 0) continue;  // the terminating zero
    out += char(value);
  }
  return true;
}
}  // namespace detail

/// A demangled name with its string literal arguments as text: `Named<fixed_string<6ul>{char[6]{(char)99,...}},
/// Dense<10>>` -> `Named<"conv1",Dense<10>>`, `fixed_string<1ul>{}` -> `""`. Where a literal is not in that form
/// it is left as it is.
inline std::string readable_type_name(std::string name) {
  constexpr std::string_view kOpen = "fixed_string<";
  for (std::size_t at = 0; (at = name.find(kOpen, at)) != std::string::npos;) {
    const std::size_t brace = name.find('{', at);
    std::string text;
    std::size_t end = std::string::npos;  // one past the literal
    if (brace != std::string::npos && name.compare(brace, 2, "{}") == 0) {
      end = brace + 2;  // "": fixed_string<1ul>{}
    } else if (const std::size_t list = brace == std::string::npos ? brace : name.find('{', brace + 1);
               list != std::string::npos) {
      const std::size_t close = name.find("}}", list);
      if (close != std::string::npos &&
          detail::decode_char_list(std::string_view(name).substr(list + 1, close - list - 1), text))
        end = close + 2;
    }
    if (end == std::string::npos) {
      at += kOpen.size();
      continue;
    }
    const std::string quoted = '"' + text + '"';
    name.replace(at, end - at, quoted);
    at += quoted.size();
  }
  return name;
}

/// T's name as checkpoints record it: sinew::nets::LeNet5<sinew::Input<1, 32, 32> > -> LeNet5<Input<1,32,32>>,
/// the same from GCC and Clang, with string literal arguments as text (Named<"fc",Dense<10>>).
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
  return readable_type_name(std::move(name));
}

}  // namespace sinew::io
