// sinew/layers/flatten.hpp: C x H x W -> C*H*W, in PyTorch's (C, H, W) order.
#pragma once

#include "sinew/layers/layer_spec.hpp"

namespace sinew {

struct Flatten {
  static constexpr std::string_view kName = "flatten";
  using kind = layer_kind::flatten;
  static constexpr std::string_view kProfile = "flatten";
  template <FeatureShape In>
  struct at {
    using output = Flat<int(In::kSize)>;
    static constexpr std::size_t kWeights = 0;
    static constexpr std::size_t kBias = 0;
  };
};

}  // namespace sinew
