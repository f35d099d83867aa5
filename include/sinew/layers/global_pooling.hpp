// sinew/layers/global_pooling.hpp: adaptive average pooling, as torch.nn.AdaptiveAvgPool2d.
//
// Output cell (i, j) averages input rows [floor(i H / OH), ceil((i + 1) H / OH)) and the columns likewise,
// PyTorch's bins: they may overlap, and when the output is larger than the input they replicate pixels
// (AlexNet's AdaptiveAvgPool<6, 6> on a 1 x 1 map copies the pixel into all 36 cells).
#pragma once

#include "sinew/layers/layer_spec.hpp"

namespace sinew {

/// This header's kind, what backends map to an op (backend/op_table.hpp): AdaptiveAvgPool and GlobalAvgPool.
namespace layer_kind {
struct adaptive_pooling {};
}  // namespace layer_kind

/// PyTorch's adaptive bins: output cell i of `out` averages input positions [bin_begin, bin_end) of `in`,
/// that is [floor(i in / out), ceil((i + 1) in / out)). Every backend's op takes its bins from here.
constexpr int adaptive_bin_begin(int i, int in, int out) { return i * in / out; }
constexpr int adaptive_bin_end(int i, int in, int out) { return ((i + 1) * in + out - 1) / out; }

namespace detail {
template <int OH, int OW>
struct adaptive_pool_at {
  /// its row in the one layer-to-op table (backend/op_table.hpp)
  using kind = layer_kind::adaptive_pooling;
  /// the operator-profile kind its time is reported under (metrics/profile.hpp)
  static constexpr std::string_view kProfile = "pooling";
  template <FeatureShape In>
  struct at {
    using output = Shape<In::kChannels, OH, OW>;
    static constexpr std::size_t kWeights = 0;
    static constexpr std::size_t kBias = 0;
  };
};
}  // namespace detail

/// AdaptiveAvgPool<OH, OW = OH>: C x H x W -> C x OH x OW for any H and W.
template <int OH, int OW = OH>
struct AdaptiveAvgPool : detail::adaptive_pool_at<OH, OW> {
  static_assert(OH > 0 && OW > 0, "AdaptiveAvgPool: the output size must be positive");
  /// what reports, profiles and checkpoints call the layer kind
  static constexpr std::string_view kName = "adaptive_avg_pool";
  /// the output's height and width
  /// @{
  static constexpr int kOutHeight = OH, kOutWidth = OW;
  /// @}
};

/// GlobalAvgPool: C x H x W -> C x 1 x 1, the mean of each channel (AdaptiveAvgPool2d(1), ResNet's head).
struct GlobalAvgPool : detail::adaptive_pool_at<1, 1> {
  /// what reports, profiles and checkpoints call the layer kind
  static constexpr std::string_view kName = "global_avg_pool";
  /// the output's height and width: 1 x 1
  /// @{
  static constexpr int kOutHeight = 1, kOutWidth = 1;
  /// @}
};

}  // namespace sinew
