// sinew/layers/detail/lower.hpp: a list of layer types lowered to Nodes, with their offsets in the flat buffers.
//
// Beside the layers, not in nets/, because a layer made of layers (Residual's branches) lowers its own Chains
// the way Sequential lowers the whole network, and layers/ must not include nets/ (docs/architecture.md).
#pragma once

#include <cstddef>

#include "sinew/core/type_list.hpp"
#include "sinew/layers/activation.hpp"
#include "sinew/layers/input.hpp"
#include "sinew/layers/layer_spec.hpp"

namespace sinew {

namespace detail {

template <class L>
concept fuses_activation = requires { requires L::kFusesActivation; };

/// lower<In, Offset, BufferOffset, Index, Fuse, Layers...>::type is the type_list of Nodes for Layers
/// applied to In; Offset and BufferOffset are where the next node's parameters and buffers start.
template <class In, std::size_t Offset, std::size_t BufferOffset, std::size_t Index, bool Fuse, class... Layers>
struct lower {
  using type = type_list<>;
  using output = In;
  static constexpr std::size_t kEnd = Offset;
  static constexpr std::size_t kBufferEnd = BufferOffset;
};

template <class In, std::size_t Offset, std::size_t BufferOffset, std::size_t Index, bool Fuse, class L,
          class... Rest>
struct lower<In, Offset, BufferOffset, Index, Fuse, L, Rest...> {
  static_assert(!is_input_v<L>, "Sequential: Input<C, H, W> may only appear first");
  using node = Node<L, In, NoActivation, Offset, Index, BufferOffset>;
  using tail = lower<typename node::output, Offset + node::kParamSpan, BufferOffset + node::kBufferSpan, Index + 1,
                     Fuse, Rest...>;
  using type = prepend_t<node, typename tail::type>;
  using output = typename tail::output;
  static constexpr std::size_t kEnd = tail::kEnd;
  static constexpr std::size_t kBufferEnd = tail::kBufferEnd;
};

template <class In, std::size_t Offset, std::size_t BufferOffset, std::size_t Index, class L, class A,
          class... Rest>
  requires(fuses_activation<L> && ActivationPolicy<A>)
struct lower<In, Offset, BufferOffset, Index, true, L, A, Rest...> {
  using node = Node<L, In, A, Offset, Index, BufferOffset>;
  using tail = lower<typename node::output, Offset + node::kParamSpan, BufferOffset + node::kBufferSpan, Index + 2,
                     true, Rest...>;
  using type = prepend_t<node, typename tail::type>;
  using output = typename tail::output;
  static constexpr std::size_t kEnd = tail::kEnd;
  static constexpr std::size_t kBufferEnd = tail::kBufferEnd;
};

/// A Chain in the list is spliced in place.
template <class In, std::size_t Offset, std::size_t BufferOffset, std::size_t Index, bool Fuse, class... Inner,
          class... Rest>
struct lower<In, Offset, BufferOffset, Index, Fuse, Chain<Inner...>, Rest...>
    : lower<In, Offset, BufferOffset, Index, Fuse, Inner..., Rest...> {};

/// Named and Module only name their layers (see layer_spec.hpp): they are spliced in place like a Chain.
template <class In, std::size_t Offset, std::size_t BufferOffset, std::size_t Index, bool Fuse, fixed_string Name,
          class L, class... Rest>
struct lower<In, Offset, BufferOffset, Index, Fuse, Named<Name, L>, Rest...>
    : lower<In, Offset, BufferOffset, Index, Fuse, L, Rest...> {};
template <class In, std::size_t Offset, std::size_t BufferOffset, std::size_t Index, bool Fuse, fixed_string Name,
          class... Inner, class... Rest>
struct lower<In, Offset, BufferOffset, Index, Fuse, Module<Name, Inner...>, Rest...>
    : lower<In, Offset, BufferOffset, Index, Fuse, Inner..., Rest...> {};

template <class List>
struct param_count;
template <class... Nodes>
struct param_count<type_list<Nodes...>> {
  static constexpr std::size_t value = (std::size_t(0) + ... + Nodes::kParams);
  static constexpr std::size_t buffers = (std::size_t(0) + ... + Nodes::kBuffers);
};

}  // namespace detail

}  // namespace sinew
