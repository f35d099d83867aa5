// sinew/backend/generic/adaptive_bins.hpp: the bins of adaptive average pooling along one axis, as every
// backend's op uses them (the formula is the layer's: AdaptiveAvgPool::bin_begin / bin_end).
#pragma once

#include <cstddef>
#include <vector>

#include "sinew/layers/global_pooling.hpp"

namespace sinew::backend::generic {

/// PyTorch's bins along one axis of `in` positions pooled to `out`, and for each input position the range of
/// bins that cover it (bins are monotone, so they form one range).
struct adaptive_axis {
  std::vector<int> begin, end;               ///< bin i covers [begin[i], end[i])
  std::vector<int> first_cover, last_cover;  ///< position r lies in bins [first_cover[r], last_cover[r])

  adaptive_axis() = default;
  adaptive_axis(int in, int out) {
    for (int i = 0; i < out; ++i) {
      begin.push_back(adaptive_bin_begin(i, in, out));
      end.push_back(adaptive_bin_end(i, in, out));
    }
    for (int r = 0; r < in; ++r) {
      int first = 0;
      while (end[std::size_t(first)] <= r) ++first;
      int last = first;
      while (last < out && begin[std::size_t(last)] <= r) ++last;
      first_cover.push_back(first);
      last_cover.push_back(last);
    }
  }
  /// The number of positions bin i averages.
  int size(int i) const { return end[std::size_t(i)] - begin[std::size_t(i)]; }
};

}  // namespace sinew::backend::generic
