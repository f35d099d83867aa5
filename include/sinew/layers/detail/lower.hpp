// sinew/layers/detail/lower.hpp: a list of layer types lowered to Nodes, with their offsets in the flat buffers.
//
// Beside the layers, not in nets/, because a layer made of layers (Residual's branches) lowers its own Chains
// the way Sequential lowers the whole network, and layers/ must not include nets/ (docs/architecture.md).
#pragma once

#include <cstddef>

#include "sinew/core/type_list.hpp"
#include "sinew/layers/activation.hpp"
#include "sinew/layers/detail/pooled_conv.hpp"
#include "sinew/layers/detail/pooled_dense.hpp"
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

/// splice<Layers...>::type: the list with every Chain, Named and Module opened, as the lowering opens them.
template <class... Layers>
struct splice {
  using type = type_list<>;
};
template <class L, class... Rest>
struct splice<L, Rest...> {
  using type = prepend_t<L, typename splice<Rest...>::type>;
};
template <class... Inner, class... Rest>
struct splice<Chain<Inner...>, Rest...> : splice<Inner..., Rest...> {};
template <fixed_string Name, class L, class... Rest>
struct splice<Named<Name, L>, Rest...> : splice<L, Rest...> {};
template <fixed_string Name, class... Inner, class... Rest>
struct splice<Module<Name, Inner...>, Rest...> : splice<Inner..., Rest...> {};

/// Whether an enlarging adaptive pool on In followed by the (spliced) layers List forms a PooledDense node:
/// Flatten and a Dense come next (pooled_dense.hpp).
template <class In, class Pool, class List>
inline constexpr bool folds_into_dense = false;
template <class In, class Pool, class D, class... Rest>
inline constexpr bool folds_into_dense<In, Pool, type_list<Flatten, D, Rest...>> =
    pool_enlarges<Pool, In>() && dense_layer<D>;

/// The node of joined layer L with activation A (the node stands for Layers written layers), then Rest lowered as
/// usual: PooledDense and PooledConv.
template <class In, std::size_t Offset, std::size_t BufferOffset, std::size_t Index, class L, class A,
          std::size_t Layers, class... Rest>
struct lower_joined {
  using node = Node<L, In, A, Offset, Index, BufferOffset>;
  using tail = lower<typename node::output, Offset + node::kParamSpan, BufferOffset + node::kBufferSpan,
                     Index + Layers, true, Rest...>;
  using type = prepend_t<node, typename tail::type>;
  using output = typename tail::output;
  static constexpr std::size_t kEnd = tail::kEnd;
  static constexpr std::size_t kBufferEnd = tail::kBufferEnd;
};
/// The spliced list after the pool: Flatten, D, and the activation after D where there is one.
template <class In, std::size_t Offset, std::size_t BufferOffset, std::size_t Index, class Pool, class List>
struct lower_pooled_dense;
template <class In, std::size_t Offset, std::size_t BufferOffset, std::size_t Index, class Pool, class D,
          class... Rest>
struct lower_pooled_dense<In, Offset, BufferOffset, Index, Pool, type_list<Flatten, D, Rest...>>
    : lower_joined<In, Offset, BufferOffset, Index, PooledDense<Pool, D>, NoActivation, 3, Rest...> {};
template <class In, std::size_t Offset, std::size_t BufferOffset, std::size_t Index, class Pool, class D, class A,
          class... Rest>
  requires ActivationPolicy<A>
struct lower_pooled_dense<In, Offset, BufferOffset, Index, Pool, type_list<Flatten, D, A, Rest...>>
    : lower_joined<In, Offset, BufferOffset, Index, PooledDense<Pool, D>, A, 4, Rest...> {};

/// Where the backend fuses, an enlarging adaptive pool, Flatten and a Dense become one PooledDense node.
template <class In, std::size_t Offset, std::size_t BufferOffset, std::size_t Index, class Pool, class... Rest>
  requires(adaptive_pool_layer<Pool> && folds_into_dense<In, Pool, typename splice<Rest...>::type>)
struct lower<In, Offset, BufferOffset, Index, true, Pool, Rest...>
    : lower_pooled_dense<In, Offset, BufferOffset, Index, Pool, typename splice<Rest...>::type> {};

/// Where the backend fuses, a Conv2d, its activation and a non-overlapping AvgPool become one PooledConv node
/// (pooled_conv.hpp); so do a Conv2d and such a pool without an activation between them.
template <class In, std::size_t Offset, std::size_t BufferOffset, std::size_t Index, class L, class A, class P,
          class... Rest>
  requires(conv_layer<L> && fuses_activation<L> && ActivationPolicy<A> && tiling_avg_pool<P>)
struct lower<In, Offset, BufferOffset, Index, true, L, A, P, Rest...>
    : lower_joined<In, Offset, BufferOffset, Index, PooledConv<L, P>, A, 3, Rest...> {};
template <class In, std::size_t Offset, std::size_t BufferOffset, std::size_t Index, class L, class P, class... Rest>
  requires(conv_layer<L> && tiling_avg_pool<P>)
struct lower<In, Offset, BufferOffset, Index, true, L, P, Rest...>
    : lower_joined<In, Offset, BufferOffset, Index, PooledConv<L, P>, NoActivation, 2, Rest...> {};

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
