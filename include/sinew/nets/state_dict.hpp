// sinew/nets/state_dict.hpp: a network's tensors under PyTorch's state_dict keys.
//
//   for (const StateEntry& e : state_dict_entries<nets::ResNet18<>>())
//     ...  // e.key == "layer1.0.conv1.weight", e.source, e.offset into Model::parameters(), e.shape()
//
// The keys come from the network's layer list: a layer inside a module is named by its position there, as
// torch.nn.Sequential numbers its children, unless Named<"fc", L> names it; Module<"features", Layers...>
// opens a submodule (layer_spec.hpp). The zoo nets declare torchvision's names this way, so a sinew model
// and the torchvision model have the same keys with the same shapes (tests/nets/test_zoo.cpp checks them
// against PyTorch's lists).
//
// The walk below follows the layer list as Sequential lowers it and places each tensor in the flat buffers
// as the lowering does; a static_assert checks that both end at the same offsets.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "sinew/core/error.hpp"
#include "sinew/core/type_list.hpp"
#include "sinew/layers/layer_spec.hpp"
#include "sinew/layers/residual.hpp"
#include "sinew/nets/sequential.hpp"

namespace sinew {

/// One tensor of a network's state_dict and where its values lie in a Model.
struct StateEntry {
  std::string key;           ///< PyTorch's state_dict key: "features.0.weight", "bn1.running_mean"
  StateSource source;        ///< weights or bias: in parameters(); buffers: in buffers(); batches_tracked: none
  std::size_t offset = 0;    ///< first float in parameters() or buffers()
  int rank = 1;              ///< 0 for a scalar
  std::array<std::int64_t, 4> extents{};

  std::vector<std::int64_t> shape() const { return {extents.begin(), extents.begin() + rank}; }
  std::size_t size() const noexcept {
    std::size_t n = 1;
    for (int d = 0; d < rank; ++d) n *= std::size_t(extents[std::size_t(d)]);
    return n;
  }
  /// Whether the values are floats in parameters() (weights, bias) rather than in buffers() or nowhere.
  bool is_parameter() const noexcept { return source == StateSource::weights || source == StateSource::bias; }
};

namespace detail {

/// The module the walk is in: its key prefix ("layer1.0.") and the position of its next layer.
struct name_scope {
  std::string prefix;
  std::size_t position = 0;

  std::string next_positional() { return prefix + std::to_string(position++); }
};

/// A layer's state_dict tensors: its ::kStateDict, or "weight" and "bias" as flat vectors.
template <class Applied>
constexpr auto state_tensors_of() {
  if constexpr (requires { Applied::kStateDict; }) {
    return Applied::kStateDict;
  } else {
    static_assert(buffers_of<Applied>() == 0,
                  "state_dict: a layer with buffers must name them in ::kStateDict (see layers/layer_spec.hpp)");
    std::array<StateTensor, 2> t{StateTensor{"weight", StateSource::weights, 0, 1, {std::int64_t(Applied::kWeights)}},
                                 StateTensor{"bias", StateSource::bias, 0, 1, {std::int64_t(Applied::kBias)}}};
    return t;
  }
}

template <class Applied>
void add_leaf(const std::string& module, std::size_t param_offset, std::size_t buffer_offset,
              std::vector<StateEntry>& out) {
  for (const StateTensor& t : state_tensors_of<Applied>()) {
    if (t.size() == 0 && t.rank > 0) continue;  // a default "bias" of a layer without one
    StateEntry e{module + "." + std::string(t.name), t.source, 0, t.rank, t.extents};
    switch (t.source) {
      case StateSource::weights: e.offset = param_offset + t.offset; break;
      case StateSource::bias: e.offset = param_offset + Applied::kWeights + t.offset; break;
      case StateSource::buffers: e.offset = buffer_offset + t.offset; break;
      case StateSource::batches_tracked: break;
    }
    out.push_back(std::move(e));
  }
}

/// state_walk<In, Offset, BufferOffset, Layers...>: names the tensors of Layers applied to In, whose
/// parameters start at Offset and buffers at BufferOffset; ::output, ::kEnd and ::kBufferEnd as lower's.
template <class In, std::size_t Offset, std::size_t BufferOffset, class... Layers>
struct state_walk {
  using output = In;
  static constexpr std::size_t kEnd = Offset;
  static constexpr std::size_t kBufferEnd = BufferOffset;
  static void run(name_scope&, std::vector<StateEntry>&) {}
};

/// The rest of a layer list, after a layer that mapped its input to Out and ended at End and BufferEnd.
template <class Out, std::size_t End, std::size_t BufferEnd, class... Rest>
using walk_rest = state_walk<Out, End, BufferEnd, Rest...>;

/// A plain layer: named by its position.
template <class In, std::size_t Offset, std::size_t BufferOffset, class L, class... Rest>
struct state_walk<In, Offset, BufferOffset, L, Rest...> {
  using node = Node<L, In, NoActivation, Offset, 0, BufferOffset>;
  using rest = walk_rest<typename node::output, Offset + node::kParamSpan, BufferOffset + node::kBufferSpan, Rest...>;
  using output = typename rest::output;
  static constexpr std::size_t kEnd = rest::kEnd;
  static constexpr std::size_t kBufferEnd = rest::kBufferEnd;

  static void run(name_scope& scope, std::vector<StateEntry>& out) {
    const std::string name = scope.next_positional();
    if constexpr (node::kParams + node::kBuffers > 0) add_leaf<typename node::applied>(name, Offset, BufferOffset, out);
    rest::run(scope, out);
  }
};

template <class In, std::size_t Offset, std::size_t BufferOffset, class... Inner, class... Rest>
struct state_walk<In, Offset, BufferOffset, Chain<Inner...>, Rest...>
    : state_walk<In, Offset, BufferOffset, Inner..., Rest...> {};

template <class T>
inline constexpr bool is_residual_v = false;
template <class M, class S>
inline constexpr bool is_residual_v<Residual<M, S>> = true;

/// Named<Name, L>: L under its own name (a Residual's branches then lie under "Name.").
template <class In, std::size_t Offset, std::size_t BufferOffset, fixed_string Name, class L, class... Rest>
struct state_walk<In, Offset, BufferOffset, Named<Name, L>, Rest...> {
  using inner = state_walk<In, Offset, BufferOffset, L>;
  using rest = walk_rest<typename inner::output, inner::kEnd, inner::kBufferEnd, Rest...>;
  using output = typename rest::output;
  static constexpr std::size_t kEnd = rest::kEnd;
  static constexpr std::size_t kBufferEnd = rest::kBufferEnd;

  static void run(name_scope& scope, std::vector<StateEntry>& out) {
    ++scope.position;
    const std::string name = scope.prefix + std::string(Name.view());
    using node = Node<L, In, NoActivation, Offset, 0, BufferOffset>;
    if constexpr (is_residual_v<L>) {
      name_scope sub{name + "."};
      inner::run(sub, out);
    } else if constexpr (node::kParams + node::kBuffers > 0) {
      add_leaf<typename node::applied>(name, Offset, BufferOffset, out);
    }
    rest::run(scope, out);
  }
};

/// Module<Name, Inner...>: a submodule whose layers are numbered from 0.
template <class In, std::size_t Offset, std::size_t BufferOffset, fixed_string Name, class... Inner, class... Rest>
struct state_walk<In, Offset, BufferOffset, Module<Name, Inner...>, Rest...> {
  using inner = state_walk<In, Offset, BufferOffset, Inner...>;
  using rest = walk_rest<typename inner::output, inner::kEnd, inner::kBufferEnd, Rest...>;
  using output = typename rest::output;
  static constexpr std::size_t kEnd = rest::kEnd;
  static constexpr std::size_t kBufferEnd = rest::kBufferEnd;

  static void run(name_scope& scope, std::vector<StateEntry>& out) {
    const std::size_t position = scope.position++;
    name_scope sub{scope.prefix + (Name.empty() ? std::to_string(position) : std::string(Name.view())) + "."};
    inner::run(sub, out);
    rest::run(scope, out);
  }
};

/// Residual: its branches' layers are named in the enclosing module, main branch first (as they lie).
template <class In, std::size_t Offset, std::size_t BufferOffset, class Main, class Shortcut, class... Rest>
struct state_walk<In, Offset, BufferOffset, Residual<Main, Shortcut>, Rest...> {
  using node = Node<Residual<Main, Shortcut>, In, NoActivation, Offset, 0, BufferOffset>;
  using main = state_walk<In, Offset, BufferOffset, Main>;
  using shortcut = state_walk<In, main::kEnd, main::kBufferEnd, typename node::applied::shortcut>;
  static_assert(shortcut::kEnd == Offset + node::kParamSpan && shortcut::kBufferEnd == BufferOffset + node::kBufferSpan,
                "state_dict: the walk over a Residual's branches disagrees with its lowering (a sinew bug)");
  using rest = walk_rest<typename node::output, Offset + node::kParamSpan, BufferOffset + node::kBufferSpan, Rest...>;
  using output = typename rest::output;
  static constexpr std::size_t kEnd = rest::kEnd;
  static constexpr std::size_t kBufferEnd = rest::kBufferEnd;

  static void run(name_scope& scope, std::vector<StateEntry>& out) {
    main::run(scope, out);
    shortcut::run(scope, out);
    rest::run(scope, out);
  }
};

template <class Net, class List>
struct network_walk;
template <class Net, class... Layers>
struct network_walk<Net, type_list<Layers...>> {
  using type = state_walk<typename Net::input_shape, 0, 0, Layers...>;
  static_assert(type::kEnd == Net::kParamSpan && type::kBufferEnd == Net::kBufferSpan,
                "state_dict: the walk over the layer list disagrees with Sequential's lowering (a sinew bug)");
};

}  // namespace detail

/// A network whose state_dict keys sinew knows: a Sequential (or any type with ::layers as Sequential's).
template <class Net>
concept NamedNetwork = requires {
  typename Net::layers;
  typename Net::input_shape;
};

/// Net's state_dict in PyTorch's order (module by module; weight, bias, then buffers). Keys are unique: two
/// layers that the layer list gives the same name stop here with an error that names the key.
template <NamedNetwork Net>
const std::vector<StateEntry>& state_dict_entries() {
  static const std::vector<StateEntry> entries = [] {
    std::vector<StateEntry> out;
    detail::name_scope top;
    detail::network_walk<Net, typename Net::layers>::type::run(top, out);
    std::unordered_set<std::string> seen;
    for (const StateEntry& e : out)
      if (!seen.insert(e.key).second)
        throw error("state_dict: two tensors are both named " + e.key +
                    "; give their layers different names with Named<\"...\", Layer> or Module<\"...\", Layers...>");
    return out;
  }();
  return entries;
}

}  // namespace sinew
