// sinew/layers/flatten.hpp: C x H x W -> C*H*W, in PyTorch's (C, H, W) order.
#pragma once

#include "sinew/layers/layer_spec.hpp"

namespace sinew {

/// This header's kind: what backends map to an op (backend/op_table.hpp).
namespace layer_kind {
struct flatten {};
}  // namespace layer_kind

/// Flatten: C x H x W -> (C * H * W), as torch.nn.Flatten; Dense needs it first.
struct Flatten {
  /// what reports, profiles and checkpoints call the layer kind
  static constexpr std::string_view kName = "flatten";
  /// its row in the one layer-to-op table (backend/op_table.hpp)
  using kind = layer_kind::flatten;
  /// the operator-profile kind its time is reported under (metrics/profile.hpp)
  static constexpr std::string_view kProfile = "flatten";
  /// The layer applied to an input of shape In (the contract is in layers/layer_spec.hpp).
  template <FeatureShape In>
  struct at {
    /// the shape of the output for one sample
    using output = Flat<int(In::kSize)>;
    /// none
    static constexpr std::size_t kWeights = 0;
    /// none
    static constexpr std::size_t kBias = 0;
  };
};

}  // namespace sinew
