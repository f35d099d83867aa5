// sinew/layers/pooling.hpp: MaxPool and AvgPool, as torch.nn.MaxPool2d and AvgPool2d (count_include_pad=True).
#pragma once

#include "sinew/layers/layer_spec.hpp"

namespace sinew {

/// This header's kind, what backends map to an op (backend/op_table.hpp): MaxPool and AvgPool.
namespace layer_kind {
struct pooling {};
}  // namespace layer_kind

namespace detail {
template <int Kernel, int Stride, int Padding>
struct pool_at {
  /// its row in the one layer-to-op table (backend/op_table.hpp)
  using kind = layer_kind::pooling;
  /// the operator-profile kind its time is reported under (metrics/profile.hpp)
  static constexpr std::string_view kProfile = "pooling";
  static_assert(Kernel > 0 && Stride > 0 && Padding >= 0, "pooling: kernel and stride must be positive");
  static_assert(2 * Padding <= Kernel, "pooling: the padding must be at most half the kernel (as in PyTorch)");
  template <FeatureShape In>
  struct at {
    static_assert(Kernel <= In::kHeight + 2 * Padding && Kernel <= In::kWidth + 2 * Padding,
                  "pooling: the window is larger than the input image; use fewer pooling layers or a larger input");
    static constexpr bool kFits = Kernel <= In::kHeight + 2 * Padding && Kernel <= In::kWidth + 2 * Padding;
    using output = Shape<In::kChannels, kFits ? window_output(In::kHeight, Kernel, Stride, Padding) : 1,
                         kFits ? window_output(In::kWidth, Kernel, Stride, Padding) : 1>;
    static constexpr std::size_t kWeights = 0;
    static constexpr std::size_t kBias = 0;
  };
};
}  // namespace detail

/// MaxPool<Kernel, Stride = Kernel, Padding = 0>
template <int Kernel, int Stride = Kernel, int Padding = 0>
struct MaxPool : detail::pool_at<Kernel, Stride, Padding> {
  /// what reports, profiles and checkpoints call the layer kind
  static constexpr std::string_view kName = "max_pool";
  /// Kernel, Stride, Padding
  /// @{
  static constexpr int kKernel = Kernel, kStride = Stride, kPadding = Padding;
  /// @}
};

/// AvgPool<Kernel, Stride = Kernel, Padding = 0>: padded zeros count in the average, as PyTorch's default.
template <int Kernel, int Stride = Kernel, int Padding = 0>
struct AvgPool : detail::pool_at<Kernel, Stride, Padding> {
  /// what reports, profiles and checkpoints call the layer kind
  static constexpr std::string_view kName = "avg_pool";
  /// Kernel, Stride, Padding
  /// @{
  static constexpr int kKernel = Kernel, kStride = Stride, kPadding = Padding;
  /// @}
};

}  // namespace sinew
