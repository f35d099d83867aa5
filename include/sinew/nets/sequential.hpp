// sinew/nets/sequential.hpp: a network written as a list of layer types.
//
//   using Net = Sequential<Input<1, 32, 32>, Conv2d<6, 5>, Tanh, AvgPool<2>, Flatten, Dense<10>>;
//
// Shapes are inferred at compile time; a layer that does not fit its input stops the build with a
// sentence naming the layer kind, and the compiler's "required from" line names the layer and the shape.
// The network lowers to a list of Nodes (one per layer, or one per Conv2d/Dense plus the activation that
// follows it when the backend fuses; there, an enlarging adaptive pool, Flatten and the Dense after them are one
// node too, layers/detail/pooled_dense.hpp, and so are a Conv2d, its activation and a non-overlapping AvgPool,
// layers/detail/pooled_conv.hpp), each with its offset in the flat parameter buffer.
#pragma once

#include <cstddef>

#include "sinew/core/type_list.hpp"
#include "sinew/layers/detail/lower.hpp"
#include "sinew/layers/input.hpp"

namespace sinew {

/// Sequential<Input<C, H, W>, Layers...>: the layers applied one after the other.
template <class In, class... Layers>
struct Sequential {
  /// The layers as written (with their Chains, Named and Modules): the state_dict names come from them.
  using layers = type_list<Layers...>;

  static_assert(is_input_v<In>, "Sequential: the first element must be Input<C, H, W>, the shape of one sample");
  static_assert(sizeof...(Layers) > 0, "Sequential: a network needs at least one layer after its Input");

  /// The shape of one input sample (Input<C, H, W>::shape).
  using input_shape = typename In::shape;
  /// The lowered nodes; with Fuse, each Conv2d or Dense absorbs the activation right after it (and a Dense the
  /// enlarging adaptive pool and Flatten right before it).
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
