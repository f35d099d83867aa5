// sinew/layers/detail/pooled_dense.hpp: an adaptive average pool that enlarges its input, Flatten, and the Dense
// after them, lowered as one node.
//
// torchvision's VGG ends its features with AdaptiveAvgPool2d((7, 7)), Flatten and Linear(512 * 7 * 7, 4096). On a
// 32 x 32 image the features end at 1 x 1, and the pool copies each channel's one pixel into 49 cells: the Dense
// then multiplies a 25088-column matrix by a vector that holds 512 values, each 49 times. Both steps are linear,
// so the Dense's matrix summed over the cells that read one input pixel (each cell's column divided by its bin's
// size) gives the same outputs from the 512 values: a 4096 x 512 product instead of 4096 x 25088, 49 times fewer
// multiplications, in the forward and both backward passes. The weights stay the Dense's, in PyTorch's layout
// (the optimizer, checkpoints and the distribution strategy see the Dense); the op folds them before a forward and
// spreads the folded gradient back over the Dense's columns after a backward (backend/generic/pooled_dense.hpp,
// on every backend alike, so that swapping the backend changes the operator library and nothing else).
//
// The lowering (lower.hpp) forms this node where a backend fuses (B::kFuseActivations), an AdaptiveAvgPool or
// GlobalAvgPool has more output cells than input pixels, and Flatten and a Dense follow it directly (the
// activation after the Dense joins as it joins a Dense). Anything between them (AlexNet's Dropout before its
// first Dense) keeps the three layers apart: dropout on the copies breaks the sum. Where the pool does not
// enlarge, the folded matrix would not be smaller, and the layers stay apart too. The profile counts the
// multiply-adds of the folded product (kMacs); metrics::forward_macs, the network's, counts the Dense's.
#pragma once

#include <concepts>
#include <cstddef>
#include <string_view>

#include "sinew/layers/dense.hpp"
#include "sinew/layers/flatten.hpp"
#include "sinew/layers/global_pooling.hpp"
#include "sinew/layers/layer_spec.hpp"

namespace sinew {

/// This header's kind: what backends map to an op (backend/op_table.hpp).
namespace layer_kind {
struct pooled_dense {};
}  // namespace layer_kind

namespace detail {

/// A layer of kind adaptive_pooling (AdaptiveAvgPool, GlobalAvgPool).
template <class L>
concept adaptive_pool_layer = requires { typename L::kind; } && std::same_as<typename L::kind, layer_kind::adaptive_pooling>;
/// A layer of kind dense.
template <class L>
concept dense_layer = requires { typename L::kind; } && std::same_as<typename L::kind, layer_kind::dense>;

/// Whether pool P on input shape In has more output cells than input pixels (and so copies some).
template <class P, class In>
constexpr bool pool_enlarges() {
  if constexpr (adaptive_pool_layer<P> && requires { typename P::template at<In>::output; }) {
    using Out = typename P::template at<In>::output;
    return Out::kHeight * Out::kWidth > In::kHeight * In::kWidth;
  } else {
    return false;
  }
}

/// Pool, Flatten and D on input In as one node (see the header comment). Its parameters, initialisation and
/// state_dict entries are D's on the flattened pool output; its output is D's.
template <class Pool, class D>
struct PooledDense {
  static_assert(adaptive_pool_layer<Pool> && dense_layer<D>, "PooledDense joins an adaptive pool and a Dense (a sinew bug)");
  /// what reports, profiles and checkpoints call the layer kind
  static constexpr std::string_view kName = "pooled_dense";
  /// its row in the one layer-to-op table (backend/op_table.hpp)
  using kind = layer_kind::pooled_dense;
  /// the operator-profile kind its time is reported under (metrics/profile.hpp): the Dense's
  static constexpr std::string_view kProfile = D::kProfile;
  /// the pool and the Dense it joins
  /// @{
  using pool = Pool;
  using dense = D;
  /// @}
  /// D's outputs and bias
  /// @{
  static constexpr int kOutputs = D::kOutputs;
  static constexpr bool kHasBias = D::kHasBias;
  /// @}
  static constexpr bool kFusesActivation = true;  ///< the activation after the Dense joins the node

  /// The pool's output for input In: the cells the Dense's columns belong to.
  template <FeatureShape In>
  using pooled = typename Pool::template at<In>::output;

  /// The layer applied to input shape In: D's on the flattened pool output, with the folded product's work.
  template <FeatureShape In>
  struct at : D::template at<Flat<int(pooled<In>::kSize)>> {
    static_assert(pool_enlarges<Pool, In>(), "PooledDense: the pool does not enlarge its input (a sinew bug)");
    /// multiply-adds per sample of the folded product: input values x outputs
    static constexpr double kMacs = double(In::kSize) * D::kOutputs;
  };
};

}  // namespace detail

}  // namespace sinew
