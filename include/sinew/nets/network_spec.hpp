// sinew/nets/network_spec.hpp: what a network type must provide.
//
// Contract. A network N is an empty type (Sequential<...> is the usual one) with
//   N::input_shape, N::output_shape     compile-time feature shapes of one sample;
//   N::template nodes<Fuse>             a type_list of Node<...> in execution order, parameter offsets
//                                       included; with Fuse, Conv2d/Dense absorb a following activation;
//   N::kParams                          trainable parameters (PyTorch's count);
//   N::kParamSpan                       floats in the flat, aligned parameter buffer (>= kParams).
// Sequential also gives kBuffers and kBufferSpan (non-trainable state); the Model sums its nodes' instead, so
// a network type need not.
// The output shape is the logits of a classifier: Flat<classes>.
#pragma once

#include <concepts>
#include <cstddef>

#include "sinew/layers/dense.hpp"
#include "sinew/layers/flatten.hpp"
#include "sinew/nets/sequential.hpp"

namespace sinew {

namespace req {
template <class N>
concept has_shapes = requires {
  typename N::input_shape;
  typename N::output_shape;
} && FeatureShape<typename N::input_shape> && FeatureShape<typename N::output_shape>;
template <class N>
concept has_nodes = requires {
  typename N::template nodes<true>;
  typename N::template nodes<false>;
};
template <class N>
concept has_network_param_counts = requires {
  { N::kParams } -> std::convertible_to<std::size_t>;
  { N::kParamSpan } -> std::convertible_to<std::size_t>;
};
}  // namespace req

/// A network type that a Model can instantiate on a backend.
template <class N>
concept NetworkPolicy = req::has_shapes<N> && req::has_nodes<N> && req::has_network_param_counts<N>;

namespace example {
using tiny_network = Sequential<Input<1, 4, 4>, Flatten, Dense<3>>;
static_assert(NetworkPolicy<tiny_network>);
static_assert(tiny_network::kParams == 16 * 3 + 3);
}  // namespace example

}  // namespace sinew

