// sinew/backend/onednn/pooled_dense.hpp: a PooledDense node (an enlarging adaptive pool, Flatten and a Dense;
// layers/detail/pooled_dense.hpp) as one inner product on the pool's input, with the Dense's matrix folded.
//
// The Dense's matrix W is [Out, C x OH x OW] (PyTorch's layout, in the flat buffer); the pool's input is
// C x H x W with fewer pixels. The folded matrix F [Out, C, H, W] holds, for each input pixel, the sum of W's
// columns of the cells whose bins cover it, each divided by its bin's size; y = F x + b is the Dense's output on
// the pooled x. Backward computes dF = dy^T x and dx = dy F on the small product, and spreads dF back: the
// gradient of W's column for cell (i, j) is the mean of dF over the cell's bin. On VGG-16 at 32 x 32 (1 x 1 ->
// 7 x 7) that is a 4096 x 512 product in place of 4096 x 25088, and one pass over W at memory speed each way
// (the fold before the forward, the spread after the backward) in place of three products that read it.
// The fold is redone only where the weights changed since the last forward (backend/generic/weight_cache.hpp):
// inference folds once.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

#include "sinew/backend/generic/adaptive_bins.hpp"
#include "sinew/backend/generic/pooled_dense.hpp"
#include "sinew/backend/onednn/dense.hpp"
#include "sinew/core/parallel.hpp"
#include "sinew/tensor/buffer.hpp"

namespace sinew::backend::onednn {

class pooled_dense_op : public dense_op {
  using base = dense_op;

 public:
  /// The pool's input and output sizes: what the fold needs.
  struct shape {
    int channels = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  };

  /// The node's shape.
  template <NodeType N>
  static shape shape_of() {
    using In = typename N::input;
    using Pooled = typename N::layer::template pooled<In>;
    return {In::kChannels, In::kHeight, In::kWidth, Pooled::kHeight, Pooled::kWidth};
  }

  template <NodeType N>
  void setup(context& ctx, const desc& src_md, int batch, ParamSlots p, bool need_diff_src) {
    using L = typename N::layer;
    setup(ctx, src_md, batch, L::kOutputs, L::kHasBias, activation_of<typename N::activation>(), p, need_diff_src,
          shape_of<N>());
  }

  /// `compute`: the type of the input and of the folded matrix the primitives read (f32, or bf16 as dense_op).
  void setup(context& ctx, const desc& src_md, int batch, int outputs, bool has_bias, simd::activation act,
             ParamSlots p, bool need_diff_src, const shape& s, dt compute = dt::f32) {
    s_ = s;
    outputs_ = std::size_t(outputs);
    user_ = p;
    build_bins();
    const std::size_t folded = outputs_ * std::size_t(s.channels) * std::size_t(s.in_h * s.in_w);
    folded_ = AlignedBuffer<float>(folded);
    diff_folded_ = AlignedBuffer<float>(folded);
    // The inner product sees the folded matrix as its weights, [Out, C, H, W] on the pool's 4-D input; the bias
    // and its gradient are the Dense's own.
    base::setup(ctx, src_md, batch, outputs, has_bias, act,
                ParamSlots{folded_.data(), p.bias, diff_folded_.data(), p.diff_bias, nullptr}, need_diff_src,
                compute);
  }

  void forward(context& ctx, const memory& src) { forward(ctx, src, metrics::no_probe); }
  void backward(context& ctx, const memory& src, const memory& diff_dst) {
    backward(ctx, src, diff_dst, metrics::no_probe);
  }

  /// The fold counts as the forward's time, the spread as backward weights'.
  template <class Probe>
  void forward(context& ctx, const memory& src, Probe& probe) {
    const bool derive = weights_cache_.take();
    if (derive) {
      probe.begin(kForwardKind);
      fold();
    }
    base::forward(ctx, src, probe, derive);
  }

  template <class Probe>
  void backward(context& ctx, const memory& src, const memory& diff_dst, Probe& probe) {
    base::backward(ctx, src, diff_dst, probe);
    probe.begin(kWeightsKind);
    spread();
  }

 private:
  // F[o][c][y][x] = the sum over the cells (i, j) whose bins cover (y, x) of W[o][c][i][j] / |bin(i, j)|. Both
  // passes stream W (or its gradient) once, at memory speed; on a 1x1 input (VGG's case) every bin is the one
  // pixel, and the fold is a plain sum over each plane's cells, the spread a fill.
  void fold() {
    const std::size_t ihw = std::size_t(s_.in_h * s_.in_w), ohw = std::size_t(s_.out_h * s_.out_w);
    const float* w = user_.weights;
    float* f = folded_.data();
    parallel_ranges(planes(), [&](std::size_t begin, std::size_t end) {
      for (std::size_t pl = begin; pl < end; ++pl) {
        const float* cells = w + pl * ohw;
        if (ihw == 1) {
          f[pl] = sum(cells, ohw);
          continue;
        }
        float* pixels = f + pl * ihw;
        std::fill_n(pixels, ihw, 0.0f);
        for (std::size_t cell = 0; cell < ohw; ++cell) {
          const float v = cells[cell] * inv_area_[cell];
          for (const int p : bin_pixels(cell)) pixels[std::size_t(p)] += v;
        }
      }
    }, 1, 1);
  }

  // dW[o][c][i][j] = the mean of dF[o][c] over bin (i, j); every cell written (the gradient is overwritten).
  void spread() {
    const std::size_t ihw = std::size_t(s_.in_h * s_.in_w), ohw = std::size_t(s_.out_h * s_.out_w);
    const float* df = diff_folded_.data();
    float* dw = user_.diff_weights;
    parallel_ranges(planes(), [&](std::size_t begin, std::size_t end) {
      for (std::size_t pl = begin; pl < end; ++pl) {
        float* cells = dw + pl * ohw;
        if (ihw == 1) {
          std::fill_n(cells, ohw, df[pl]);
          continue;
        }
        const float* pixels = df + pl * ihw;
        for (std::size_t cell = 0; cell < ohw; ++cell) {
          float total = 0;
          for (const int p : bin_pixels(cell)) total += pixels[std::size_t(p)];
          cells[cell] = total * inv_area_[cell];
        }
      }
    }, 1, 1);
  }

  // The sum of n floats in eight independent chains (a plane's 49 cells: the adds overlap instead of waiting on
  // each other).
  static float sum(const float* x, std::size_t n) {
    float acc[8] = {};
    std::size_t k = 0;
    for (; k + 8 <= n; k += 8)
      for (std::size_t l = 0; l < 8; ++l) acc[l] += x[k + l];
    for (; k < n; ++k) acc[0] += x[k];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  }

  std::size_t planes() const noexcept { return outputs_ * std::size_t(s_.channels); }
  std::span<const int> bin_pixels(std::size_t cell) const noexcept {
    return std::span<const int>(bin_pixels_).subspan(bin_begin_[cell], bin_begin_[cell + 1] - bin_begin_[cell]);
  }

  // The input pixels of each cell's bin (row-major positions), one list after another, and 1 / the bin's size.
  void build_bins() {
    const generic::adaptive_axis rows(s_.in_h, s_.out_h), cols(s_.in_w, s_.out_w);
    bin_begin_.assign(1, 0);
    bin_pixels_.clear();
    inv_area_.clear();
    for (int i = 0; i < s_.out_h; ++i)
      for (int j = 0; j < s_.out_w; ++j) {
        for (int y = rows.begin[std::size_t(i)]; y < rows.end[std::size_t(i)]; ++y)
          for (int x = cols.begin[std::size_t(j)]; x < cols.end[std::size_t(j)]; ++x) bin_pixels_.push_back(y * s_.in_w + x);
        bin_begin_.push_back(bin_pixels_.size());
        inv_area_.push_back(1.0f / float(rows.size(i) * cols.size(j)));
      }
  }

  shape s_{};
  std::size_t outputs_ = 0;
  ParamSlots user_;  // the Dense's weights and gradient in the flat buffers (PyTorch's layout)
  std::vector<std::size_t> bin_begin_;  // cell k's pixels: bin_pixels_[bin_begin_[k], bin_begin_[k + 1])
  std::vector<int> bin_pixels_;
  std::vector<float> inv_area_;
  AlignedBuffer<float> folded_, diff_folded_;
};

}  // namespace sinew::backend::onednn

namespace sinew::backend {
template <>
struct op_for<layer_kind::pooled_dense, OneDnn> {
  using type = onednn::pooled_dense_op;
};
}  // namespace sinew::backend
