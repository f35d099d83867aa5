// sinew/layers/dense.hpp: fully connected layer, as torch.nn.Linear.
#pragma once

#include "sinew/layers/layer_spec.hpp"

namespace sinew {

/// This header's kind: what backends map to an op (backend/op_table.hpp).
namespace layer_kind {
struct dense {};
}  // namespace layer_kind

/// Dense<Out>: y = x W^T + b with weights [Out, In] and bias [Out]. Needs a flat input: put Flatten first.
template <int Out, bool Bias = true>
struct Dense {
  static_assert(Out > 0, "Dense: the number of outputs must be positive");

  /// what reports, profiles and checkpoints call the layer kind
  static constexpr std::string_view kName = "dense";
  /// its row in the one layer-to-op table (backend/op_table.hpp)
  using kind = layer_kind::dense;
  /// the operator-profile kind its time is reported under (metrics/profile.hpp)
  static constexpr std::string_view kProfile = "fully_connected";
  /// Out
  static constexpr int kOutputs = Out;
  /// whether it has a bias
  static constexpr bool kHasBias = Bias;
  static constexpr bool kFusesActivation = true;  ///< an activation right after it may be fused

  /// The layer applied to an input of shape In (the contract is in layers/layer_spec.hpp).
  template <FeatureShape In>
  struct at {
    static_assert(In::kIsFlat,
                  "Dense needs a flat input but follows a C x H x W output: insert Flatten before the first Dense");
    /// the shape of the output for one sample
    using output = Flat<Out>;
    /// inputs per output
    static constexpr std::size_t kFanIn = In::kSize;
    /// trainable weights (floats) at this input
    static constexpr std::size_t kWeights = std::size_t(Out) * kFanIn;
    /// trainable biases (floats); 0 without bias
    static constexpr std::size_t kBias = Bias ? Out : 0;
    /// multiply-adds per sample: inputs x outputs
    static constexpr double kMacs = double(In::kSize) * Out;
    /// PyTorch's weight [out, in] and, with Bias, bias [out].
    static constexpr auto kStateDict = [] {
      constexpr StateTensor weight{"weight", StateSource::weights, 0, 2, {Out, std::int64_t(kFanIn)}};
      if constexpr (Bias)
        return std::array{weight, StateTensor{"bias", StateSource::bias, 0, 1, {Out}}};
      else
        return std::array{weight};
    }();

    /// PyTorch's default initialisation: weights and bias uniform in +-1 / sqrt(kFanIn).
    static void init(std::span<float> weights, std::span<float> bias, Rng& rng) {
      detail::init_fan_in_uniform(weights, bias, kFanIn, rng);
    }
  };
};

}  // namespace sinew
