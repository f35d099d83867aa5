// sinew/nets/state_dict.hpp: a network's tensors under PyTorch's state_dict keys.
//
//   for (const StateEntry& e : state_dict_entries<nets::ResNet18<>>())
//     ...  // e.key == "layer1.0.conv1.weight", e.source, e.offset into Model::parameters(), e.shape()
//
// The keys come from the network's layer list: a layer inside a module is named by its position there, as
// torch.nn.Sequential numbers its children, unless Named<"fc", L> names it; Module<"features", Layers...>
// opens a submodule (layer_spec.hpp). The zoo nets declare torchvision's names this way, so a sinew model
// and the torchvision model have the same keys with the same shapes (tests/nets/test_resnet.cpp and
// test_lenet5_alexnet_vgg.cpp check them against PyTorch's golden files).
//
// The walk below follows the layer list as Sequential lowers it and places each tensor in the flat buffers
// as the lowering does; a static_assert checks that both end at the same offsets. The walk is constexpr, so
// the keys are known at compile time and checked there: two tensors under one key (two bare projecting
// Residuals in one module both name their shortcut downsample.*) stop the build with a sentence, and the
// clashing key appears in the instantiation of detail::state_dict_key_clash<"the.key"> above it.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sinew/core/diagnostics.hpp"
#include "sinew/core/error.hpp"
#include "sinew/core/fixed_string.hpp"
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
  /// the extents, the first `rank` of them used
  std::array<std::int64_t, 4> extents{};

  /// The extents in use, as PyTorch's shape.
  std::vector<std::int64_t> shape() const { return {extents.begin(), extents.begin() + rank}; }
  /// Elements: the product of the extents (1 for a scalar).
  constexpr std::size_t size() const noexcept {
    std::size_t n = 1;
    for (int d = 0; d < rank; ++d) n *= std::size_t(extents[std::size_t(d)]);
    return n;
  }
  /// Whether the values are floats in parameters() (weights, bias) rather than in buffers() or nowhere.
  constexpr bool is_parameter() const noexcept { return source == StateSource::weights || source == StateSource::bias; }
};

namespace detail {

/// A key as the constexpr walk builds it: a fixed array, as GCC 12 cannot evaluate every std::string
/// operation in a constant expression (short strings copied between vectors).
struct key_text {
  static constexpr std::size_t kCapacity = 256;
  std::array<char, kCapacity> chars{};
  std::size_t size = 0;

  constexpr key_text& operator+=(std::string_view s) {
    if (size + s.size() > kCapacity)
      throw error("state_dict: a key is longer than 256 characters; shorten the Named or Module names");
    for (char c : s) chars[size++] = c;
    return *this;
  }
  /// "12": std::to_string is not constexpr.
  constexpr key_text& operator+=(std::size_t n) {
    char digits[20]{};
    std::size_t count = 0;
    do digits[count++] = char('0' + n % 10);
    while ((n /= 10) != 0);
    while (count > 0) *this += std::string_view(&digits[--count], 1);
    return *this;
  }
  constexpr std::string_view view() const noexcept { return {chars.data(), size}; }
};

/// A StateEntry as the constexpr walk records it.
struct state_record {
  key_text key;
  StateSource source = StateSource::weights;
  std::size_t offset = 0;
  int rank = 1;
  std::array<std::int64_t, 4> extents{};
};

/// The module the walk is in: its key prefix ("layer1.0.") and the position of its next layer.
struct name_scope {
  key_text prefix;
  std::size_t position = 0;

  constexpr key_text next_positional() {
    key_text k = prefix;
    k += position++;
    return k;
  }
};

/// The scope of the submodule or Residual called `name`: its keys start "name.".
constexpr name_scope sub_scope(key_text name) {
  name += ".";
  return name_scope{name, 0};
}

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
constexpr void add_leaf(const key_text& module, std::size_t param_offset, std::size_t buffer_offset,
                        std::vector<state_record>& out) {
  for (const StateTensor& t : state_tensors_of<Applied>()) {
    if (t.size() == 0 && t.rank > 0) continue;  // a default "bias" of a layer without one
    state_record e{module, t.source, 0, t.rank, t.extents};
    e.key += ".";
    e.key += t.name;
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
  static constexpr void run(name_scope&, std::vector<state_record>&) {}
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

  static constexpr void run(name_scope& scope, std::vector<state_record>& out) {
    const key_text name = scope.next_positional();
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

  static constexpr void run(name_scope& scope, std::vector<state_record>& out) {
    ++scope.position;
    key_text name = scope.prefix;
    name += Name.view();
    using node = Node<L, In, NoActivation, Offset, 0, BufferOffset>;
    if constexpr (is_residual_v<L>) {
      name_scope sub = sub_scope(name);
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

  static constexpr void run(name_scope& scope, std::vector<state_record>& out) {
    const std::size_t position = scope.position++;
    key_text name = scope.prefix;
    if (Name.empty()) name += position;
    else name += Name.view();
    name_scope sub = sub_scope(name);
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

  static constexpr void run(name_scope& scope, std::vector<state_record>& out) {
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

/// A network whose state_dict keys sinew knows: a Sequential (or any type with a `layers` list as Sequential's).
template <class Net>
concept NamedNetwork = requires {
  typename Net::layers;
  typename Net::input_shape;
};

namespace detail {

/// Net's state_dict entries; constexpr, so the keys can be checked at compile time.
template <NamedNetwork Net>
constexpr std::vector<state_record> walk_state_dict() {
  std::vector<state_record> out;
  name_scope top;
  network_walk<Net, typename Net::layers>::type::run(top, out);
  return out;
}

/// The first (in sorted order) key that two of Net's tensors share, or "" if every key is unique.
template <NamedNetwork Net>
constexpr key_text clashing_key() {
  const std::vector<state_record> entries = walk_state_dict<Net>();
  std::vector<std::string_view> keys;
  for (const state_record& e : entries) keys.push_back(e.key.view());
  std::sort(keys.begin(), keys.end());
  for (std::size_t i = 1; i < keys.size(); ++i)
    if (keys[i] == keys[i - 1]) {
      key_text clash;
      clash += keys[i];
      return clash;
    }
  return {};
}

/// The clashing key as a template argument, so that the compiler prints it.
template <NamedNetwork Net, std::size_t N>
constexpr fixed_string<N> clashing_key_literal() {
  char chars[N]{};
  const key_text key = clashing_key<Net>();
  std::copy_n(key.chars.begin(), key.size, chars);
  return fixed_string<N>(chars);
}

/// Instantiated only for a clash: the compiler shows Key in "required from state_dict_key_clash<...>".
template <fixed_string Key>
struct state_dict_key_clash {
  static_assert(dependent_false_v<Key>,
                "state_dict: two tensors of this network have the same key, the one in state_dict_key_clash<...> "
                "above; give their layers different names with Named<\"...\", Layer> or Module<\"...\", Layers...> "
                "(two projecting Residuals in one module both name their shortcut downsample.*: put each in a Module)");
  static constexpr bool value = false;
};

template <NamedNetwork Net, std::size_t ClashSize = clashing_key<Net>().size>
struct unique_state_dict_keys {
  static constexpr bool value = true;
};
template <NamedNetwork Net, std::size_t ClashSize>
  requires(ClashSize > 0)
struct unique_state_dict_keys<Net, ClashSize> : state_dict_key_clash<clashing_key_literal<Net, ClashSize + 1>()> {};

}  // namespace detail

/// Net's state_dict in PyTorch's order (module by module; weight, bias, then buffers). The keys are unique,
/// checked at compile time: a network whose are not stops the build here (and so in io::save_safetensors and
/// io::load_safetensors) with a sentence, the clashing key shown in state_dict_key_clash<"the.key">.
template <NamedNetwork Net>
const std::vector<StateEntry>& state_dict_entries() {
  [[maybe_unused]] constexpr bool unique_keys = detail::unique_state_dict_keys<Net>::value;
  static const std::vector<StateEntry> entries = [] {
    std::vector<StateEntry> out;
    for (const detail::state_record& r : detail::walk_state_dict<Net>())
      out.push_back(StateEntry{std::string(r.key.view()), r.source, r.offset, r.rank, r.extents});
    return out;
  }();
  return entries;
}

}  // namespace sinew
