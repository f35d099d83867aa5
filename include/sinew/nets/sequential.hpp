// sinew/nets/sequential.hpp: a network written as a list of layer types.
//
//   using Net = Sequential<Input<1, 32, 32>, Conv2d<6, 5>, Tanh, AvgPool<2>, Flatten, Dense<10>>;
//
// Shapes are inferred at compile time; a layer that does not fit its input stops the build with a
// sentence naming the layer kind, and the compiler's "required from" line names the layer and the shape.
// The network lowers to a list of Nodes (one per layer, or one per Conv2d/Dense plus the activation that
// follows it when the backend fuses), each with its offset in the flat parameter buffer.
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
  requires(fuses_activation<L> && Activation<A>)
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

/// Sequential<Input<C, H, W>, Layers...>: the layers applied one after the other.
template <class In, class... Layers>
struct Sequential {
  /// The layers as written (with their Chains, Named and Modules): the state_dict names come from them.
  using layers = type_list<Layers...>;

  static_assert(is_input_v<In>, "Sequential: the first element must be Input<C, H, W>, the shape of one sample");
  static_assert(sizeof...(Layers) > 0, "Sequential: a network needs at least one layer after its Input");

  /// The shape of one input sample (Input<C, H, W>::shape).
  using input_shape = typename In::shape;
  /// The lowered nodes; with Fuse, each Conv2d or Dense absorbs the activation right after it.
  template <bool Fuse>
  using nodes = typename detail::lower<input_shape, 0, 0, 0, Fuse, Layers...>::type;
  /// The shape of the network's output for one sample.
  using output_shape = typename detail::lower<input_shape, 0, 0, 0, false, Layers...>::output;

  /// Trainable parameters, as PyTorch counts them.
  static constexpr std::size_t kParams = detail::param_count<nodes<false>>::value;
  /// Floats in the flat parameter buffer: every layer starts 64-byte aligned.
  static constexpr std::size_t kParamSpan = detail::lower<input_shape, 0, 0, 0, false, Layers...>::kEnd;
  /// Non-trainable state (BatchNorm's running statistics), as PyTorch's buffers less num_batches_tracked.
  static constexpr std::size_t kBuffers = detail::param_count<nodes<false>>::buffers;
  /// Floats in the flat buffer array: every layer's buffers start 64-byte aligned.
  static constexpr std::size_t kBufferSpan = detail::lower<input_shape, 0, 0, 0, false, Layers...>::kBufferEnd;
  /// the number of entries after Input (a Chain, Named or Module counts one)
  static constexpr std::size_t kLayers = sizeof...(Layers);
};

}  // namespace sinew
