// sinew/backend/onednn/pooled_conv.hpp: OneDnn's op for a PooledConv node (a Conv2d, its activation and a
// non-overlapping AvgPool; layers/detail/pooled_conv.hpp).
//
// Where the convolution runs on the thin kernels (LeNet-5's two), thin_conv2d_op pools each image's output as it
// writes it and spreads the pool's gradient inside its activation-backward pass. Every other convolution runs as
// the two layers would apart (generic/pooled_conv.hpp): oneDNN's convolutions write whole batches in blocked
// layouts, and a pool after them has no image in cache to start from.
#pragma once

#include <type_traits>

#include "sinew/backend/generic/pooled_conv.hpp"
#include "sinew/backend/onednn/conv2d.hpp"
#include "sinew/backend/onednn/thin_conv2d.hpp"

namespace sinew::backend {

namespace onednn {
/// The op of PooledConv node N on OneDnn: the thin convolution's, pooling in its passes, where the convolution
/// is thin; else the convolution's op and the pooling op one after the other.
template <NodeType N>
using pooled_conv_op_for = std::conditional_t<
    std::is_same_v<conv2d_op_for<typename N::layer::template nodes<typename N::input,
                                                                   typename N::activation>::conv_node>,
                   thin_conv2d_op>,
    thin_conv2d_op, generic::pooled_conv_op<OneDnn, N>>;
}  // namespace onednn

/// see onednn::pooled_conv_op_for
template <>
struct op_for<layer_kind::pooled_conv, OneDnn> {
  template <NodeType N>
  using type_for = onednn::pooled_conv_op_for<N>;
};

}  // namespace sinew::backend
