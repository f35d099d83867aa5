// sinew/layers/detail/pooled_conv.hpp: a Conv2d, its activation, and the average pool over non-overlapping windows
// after them (LeNet-5's Conv2d, Tanh, AvgPool<2>), lowered as one node.
//
// The pool is linear and reads each of the convolution's outputs once, so it can run on each image's output while
// that output is still in cache, and its backward can feed the activation's backward in the same pass: one op, one
// set of passes over the batch, in place of two ops with a fork and join each way (on LeNet-5 at batch 42 the
// poolings' own passes took about a tenth of the step on Zen 5; figures in bench/README.md, "Why the kernels are
// as they are"). The math is unchanged: the node's output is the pool's, its parameters, initialisation and
// state_dict entries the convolution's.
//
// The lowering (lower.hpp) forms the node where a backend fuses (B::kFuseActivations) and an AvgPool whose stride
// is its kernel, without padding, follows a Conv2d (or a Conv2d and its activation) directly. Every backend runs it
// as its own convolution and pooling ops in sequence (backend/generic/pooled_conv.hpp); OneDnn runs the thin
// convolutions' form in one op (backend/onednn/thin_conv2d.hpp). The network's layout (what a checkpoint must
// match) names the layers as written; reports and profiles name the node "conv2d+tanh+avg_pool".
#pragma once

#include <concepts>
#include <cstddef>
#include <string_view>

#include "sinew/layers/conv2d.hpp"
#include "sinew/layers/layer_spec.hpp"
#include "sinew/layers/pooling.hpp"

namespace sinew {

/// This header's kind: what backends map to an op (backend/op_table.hpp).
namespace layer_kind {
struct pooled_conv {};
}  // namespace layer_kind

namespace detail {

/// A layer of kind conv2d (Conv2d, DepthwiseConv2d).
template <class L>
concept conv_layer = requires { typename L::kind; } && std::same_as<typename L::kind, layer_kind::conv2d>;

/// An AvgPool over non-overlapping windows without padding: what a PooledConv node takes after its convolution.
template <class L>
concept tiling_avg_pool = requires {
  requires std::same_as<L, AvgPool<L::kKernel, L::kStride, L::kPadding>>;
  requires L::kKernel == L::kStride && L::kPadding == 0;
};

/// Conv, its activation (the node's) and Pool on input In as one node (see the header comment). Its parameters,
/// initialisation and state_dict entries are Conv's; its output is Pool's.
template <class Conv, class Pool>
struct PooledConv {
  static_assert(conv_layer<Conv> && tiling_avg_pool<Pool>,
                "PooledConv joins a Conv2d and a non-overlapping AvgPool (a sinew bug)");
  /// what reports, profiles and checkpoints call the layer kind: the convolution's, with kThen after the activation
  static constexpr std::string_view kName = Conv::kName;
  /// the written layer after the convolution and its activation: reports name the node "conv2d+tanh+avg_pool"
  static constexpr std::string_view kThen = Pool::kName;
  /// its row in the one layer-to-op table (backend/op_table.hpp)
  using kind = layer_kind::pooled_conv;
  /// the operator-profile kind its time is reported under (metrics/profile.hpp): the convolution's
  static constexpr std::string_view kProfile = Conv::kProfile;
  static constexpr bool kFusesActivation = true;  ///< the activation after the convolution joins the node
  /// the convolution and the pool it joins
  /// @{
  using conv = Conv;
  using pool = Pool;
  /// @}

  /// The layer applied to input In: Conv's, with Pool's output.
  template <FeatureShape In>
  struct at : Conv::template at<In> {
    /// the convolution's output, the pool's input
    using conv_output = typename Conv::template at<In>::output;
    /// the pool's output
    using output = typename Pool::template at<conv_output>::output;
    /// the floats per sample both layers write (metrics/traffic.hpp)
    static constexpr std::size_t kActivations = conv_output::kSize + output::kSize;
  };

  /// The two nodes it stands for, with activation Act, at offset 0 of the node's slices: what the ops run.
  template <FeatureShape In, class Act>
  struct nodes {
    /// the convolution and its activation
    using conv_node = Node<Conv, In, Act, 0, 0, 0>;
    /// the pool, after the convolution's parameters
    using pool_node = Node<Pool, typename conv_node::output, NoActivation, conv_node::kParamSpan, 1, 0>;
  };
};

}  // namespace detail

}  // namespace sinew
