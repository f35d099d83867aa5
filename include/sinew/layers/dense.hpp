// sinew/layers/dense.hpp: fully connected layer, as torch.nn.Linear.
#pragma once

#include "sinew/layers/layer_spec.hpp"

namespace sinew {

/// Dense<Out>: y = x W^T + b with weights [Out, In] and bias [Out]. Needs a flat input: put Flatten first.
template <int Out, bool Bias = true>
struct Dense {
  static_assert(Out > 0, "Dense: the number of outputs must be positive");

  static constexpr std::string_view kName = "dense";
  using kind = layer_kind::dense;
  static constexpr std::string_view kProfile = "fully_connected";
  static constexpr int kOutputs = Out;
  static constexpr bool kHasBias = Bias;
  static constexpr bool kFusesActivation = true;  ///< an activation right after it may be fused

  template <FeatureShape In>
  struct at {
    static_assert(In::kIsFlat,
                  "Dense needs a flat input but follows a C x H x W output: insert Flatten before the first Dense");
    using output = Flat<Out>;
    static constexpr std::size_t kFanIn = In::kSize;
    static constexpr std::size_t kWeights = std::size_t(Out) * kFanIn;
    static constexpr std::size_t kBias = Bias ? Out : 0;
    /// PyTorch's weight [out, in] and, with Bias, bias [out].
    static constexpr auto kStateDict = [] {
      constexpr StateTensor weight{"weight", StateSource::weights, 0, 2, {Out, std::int64_t(kFanIn)}};
      if constexpr (Bias)
        return std::array{weight, StateTensor{"bias", StateSource::bias, 0, 1, {Out}}};
      else
        return std::array{weight};
    }();

    static void init(std::span<float> weights, std::span<float> bias, Rng& rng) {
      detail::init_fan_in_uniform(weights, bias, kFanIn, rng);
    }
  };
};

}  // namespace sinew
