// sinew/backend/generic/adaptive_bins.hpp: the bins of adaptive average pooling along one axis, as every
// backend's op uses them (the formula is the layer's: AdaptiveAvgPool::bin_begin / bin_end).
#pragma once

#include <cstddef>
#include <span>
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

/// The bins of an in_h x in_w map pooled to out_h x out_w, cell by cell (row-major): each cell's input pixels
/// (row-major positions in the map) and 1 / their count, and the pool and its transpose on one plane through them.
/// Ops that walk a plane a cell at a time (OneDnn's pooling on NCHW, the folded Dense on every backend) use these
/// lists instead of the two axes' bounds, which cost a loop's set-up per cell (figures:
/// bench/results/2026-12-02-zen5-adaptive-pool-cells).
struct adaptive_cells {
  adaptive_cells() = default;
  adaptive_cells(int in_h, int in_w, int out_h, int out_w) : begin_(1, 0) {
    for (int i = 0; i < out_h; ++i)
      for (int j = 0; j < out_w; ++j) {
        const int top = adaptive_bin_begin(i, in_h, out_h), bottom = adaptive_bin_end(i, in_h, out_h);
        const int left = adaptive_bin_begin(j, in_w, out_w), right = adaptive_bin_end(j, in_w, out_w);
        for (int y = top; y < bottom; ++y)
          for (int x = left; x < right; ++x) pixels_.push_back(y * in_w + x);
        begin_.push_back(pixels_.size());
        inv_area_.push_back(1.0f / float((bottom - top) * (right - left)));
      }
  }
  /// The number of cells.
  std::size_t size() const noexcept { return inv_area_.size(); }
  /// Cell k's input pixels.
  std::span<const int> pixels(std::size_t k) const noexcept {
    return std::span<const int>(pixels_).subspan(begin_[k], begin_[k + 1] - begin_[k]);
  }
  /// Whether every cell averages one pixel (an enlarging pool such as AlexNet's 1x1 -> 6x6).
  bool single_pixels() const noexcept { return pixels_.size() == size(); }

  /// The pool on one plane: cells[k] = the mean of plane over cell k's pixels (a gather where each bin is one
  /// pixel). The forward of an adaptive pool; the spread of a folded Dense's gradient onto its cells.
  void pool(const float* plane, float* cells) const noexcept {
    if (single_pixels()) {
      const int* source = pixels_.data();
      for (std::size_t k = 0, n = size(); k < n; ++k) cells[k] = plane[source[k]];
      return;
    }
    for (std::size_t k = 0; k < size(); ++k) {
      float sum = 0;
      for (const int px : pixels(k)) sum += plane[px];
      cells[k] = sum * inv_area_[k];
    }
  }
  /// The pool's transpose on one plane, added: plane[px] += cells[k] / |cell k| for every pixel px of every cell
  /// k (bins may overlap). The backward of an adaptive pool; the fold of a folded Dense's matrix onto its input.
  void unpool_add(const float* cells, float* plane) const noexcept {
    if (single_pixels()) {
      const int* target = pixels_.data();
      for (std::size_t k = 0, n = size(); k < n; ++k) plane[target[k]] += cells[k];
      return;
    }
    for (std::size_t k = 0; k < size(); ++k) {
      const float v = cells[k] * inv_area_[k];
      for (const int px : pixels(k)) plane[px] += v;
    }
  }

 private:
  std::vector<std::size_t> begin_;  // cell k's pixels: pixels_[begin_[k], begin_[k + 1])
  std::vector<int> pixels_;
  std::vector<float> inv_area_;
};

}  // namespace sinew::backend::generic
