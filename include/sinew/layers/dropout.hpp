// sinew/layers/dropout.hpp: torch.nn.Dropout.
//
// In training mode each element is zeroed with probability p and the others are scaled by 1 / (1 - p); in
// evaluation mode the layer is the identity. Masks are drawn from the model seed, the node and the training
// step, so a run is reproducible (see Model::step()).
#pragma once

#include "sinew/layers/layer_spec.hpp"

namespace sinew {

/// This header's kind: what backends map to an op (backend/op_table.hpp).
namespace layer_kind {
struct dropout {};
}  // namespace layer_kind

/// Dropout<Percent = 50>: p = Percent / 100. An integer percent, because a float template argument needs
/// a compiler with C++20's floating-point non-type parameters (Clang has them only since 18), and every
/// published network drops a whole percentage.
template <int Percent = 50>
struct Dropout {
  static_assert(Percent >= 0 && Percent < 100, "Dropout: the percentage dropped must be in [0, 100)");

  /// what reports, profiles and checkpoints call the layer kind
  static constexpr std::string_view kName = "dropout";
  /// its row in the one layer-to-op table (backend/op_table.hpp)
  using kind = layer_kind::dropout;
  /// the operator-profile kind its time is reported under (metrics/profile.hpp)
  static constexpr std::string_view kProfile = "dropout";
  /// Percent
  static constexpr int kPercent = Percent;
  static constexpr float kP = float(Percent) / 100.0f;  ///< probability of zeroing an element

  /// The layer applied to an input of shape In (the contract is in layers/layer_spec.hpp).
  template <FeatureShape In>
  struct at {
    /// the input's shape
    using output = In;
    /// none
    static constexpr std::size_t kWeights = 0;
    /// none
    static constexpr std::size_t kBias = 0;
  };
};

}  // namespace sinew
