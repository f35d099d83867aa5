// sinew/backend/onednn/depthwise_backward_weights.hpp: a depthwise convolution's weight (and bias) gradient as one
// pass over its input and output gradient in NHWC, written straight into the flat gradient buffer.
//
// Why: oneDNN's depthwise kernel (jit_dw, 2.6 and 3.7, AVX2 and AVX-512) takes the forward and backward data of a
// 3x3 layer on a 2x2 image but not its backward weights, and the primitive oneDNN falls back to for that is its
// gemm-based convolution, which runs a product of a few elements per image and channel: MobileNetV2's 384- and
// 576-channel layers on 2x2 images (32x32 input, batch 42) took 4.2-7.0 ms each against 0.03 ms for their
// forward, three quarters of the network's step. Per channel the gradient is K x K sums over the batch's output
// pixels of dy times the input pixel the tap reads; with the channels innermost each (pixel, tap) is a vector
// multiply-add over a run of channels. conv2d_op takes this form for f32 depthwise layers where oneDNN's choice
// for backward weights is its gemm convolution (conv2d.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "sinew/backend/generic/node_config.hpp"
#include "sinew/backend/onednn/common.hpp"
#include "sinew/core/parallel.hpp"

namespace sinew::backend::onednn {

/// A depthwise convolution's backward weights as the pass above, in place of oneDNN's primitive
/// (weighted_layer.hpp).
class depthwise_backward_weights {
 public:
  /// Sets the pass up for depthwise convolution `c` (one output per channel), whose forward reads `src_md` and
  /// writes `dst_md` (the layouts oneDNN chose); its gradient goes to `diff_weights` ([C, 1, K, K]) and, where `c`
  /// has a bias, `diff_bias` ([C]).
  void setup(context& ctx, const Conv2dConfig& c, const desc& src_md, const desc& dst_md, float* diff_weights,
             float* diff_bias) {
    if (!c.is_depthwise())
      throw backend_error("depthwise_backward_weights: " + std::to_string(c.groups) + " groups over " +
                          std::to_string(c.in_c) + " input and " + std::to_string(c.out_c) +
                          " output channels given; it computes depthwise convolutions (one output per channel) only");
    c_ = c;
    image_.setup(ctx, src_md, desc({c.batch, c.in_c, c.in_h, c.in_w}, dt::f32, tag::nhwc));
    dy_.setup(ctx, dst_md, desc({c.batch, c.out_c, c.out_h, c.out_w}, dt::f32, tag::nhwc));
    diff_weights_ = diff_weights;
    diff_bias_ = c.bias ? diff_bias : nullptr;
    const std::size_t runs = (std::size_t(c.in_c) + kRun - 1) / kRun;
    sums_.assign(runs * run_sums(), 0.0f);
  }
  /// Whether backward weights runs as this pass.
  explicit operator bool() const noexcept { return diff_weights_ != nullptr; }

  /// `src`: the forward's input in the layout it read; `diff_dst`: the output gradient in the forward's output layout.
  void run(context& ctx, const memory& src, const memory& diff_dst) {
    const auto* x = static_cast<const float*>(image_(ctx, src).get_data_handle());
    const auto* dy = static_cast<const float*>(dy_(ctx, diff_dst).get_data_handle());
    const std::size_t channels = std::size_t(c_.in_c);
    parallel_ranges(
        channels, [&](std::size_t begin, std::size_t end) { sums(x, dy, begin, end); }, kRun, kRun);
  }

 private:
  /// Channels summed together: each (pixel, tap) adds a run of them, four AVX-512 vectors.
  static constexpr std::size_t kRun = 64;

  /// Floats of one run's sums: the taps' runs, then the bias's.
  std::size_t run_sums() const noexcept { return std::size_t(c_.kernel * c_.kernel + 1) * kRun; }

  /// The gradients of channels [begin, end), a run at a time: the taps' sums stay in the run's K x K + 1 rows of
  /// `sums_` (set up once, so the step allocates nothing; a run is one thread's) while the batch's pixels pass, then
  /// go to [C, 1, K, K].
  void sums(const float* x, const float* dy, std::size_t begin, std::size_t end) {
    const int k = c_.kernel, taps = k * k;
    const std::size_t channels = std::size_t(c_.in_c);
    for (std::size_t first = begin; first < end; first += kRun) {
      const std::size_t width = std::min(kRun, end - first);
      float* const acc = sums_.data() + first / kRun * run_sums();
      std::fill(acc, acc + run_sums(), 0.0f);
      float* const bias = acc + std::size_t(taps) * kRun;
      for (int n = 0; n < c_.batch; ++n)
        for (int oy = 0; oy < c_.out_h; ++oy)
          for (int ox = 0; ox < c_.out_w; ++ox) {
            const float* g = dy + ((std::size_t(n) * c_.out_h + oy) * c_.out_w + ox) * channels + first;
            for (std::size_t j = 0; j < width; ++j) bias[j] += g[j];
            for (int ky = 0; ky < k; ++ky) {
              const int iy = oy * c_.stride - c_.padding + ky * c_.dilation;
              if (iy < 0 || iy >= c_.in_h) continue;
              for (int kx = 0; kx < k; ++kx) {
                const int ix = ox * c_.stride - c_.padding + kx * c_.dilation;
                if (ix < 0 || ix >= c_.in_w) continue;
                const float* in = x + ((std::size_t(n) * c_.in_h + iy) * c_.in_w + ix) * channels + first;
                float* const a = acc + std::size_t(ky * k + kx) * kRun;
#pragma omp simd
                for (std::size_t j = 0; j < width; ++j) a[j] += g[j] * in[j];
              }
            }
          }
      for (std::size_t j = 0; j < width; ++j) {
        for (int t = 0; t < taps; ++t)
          diff_weights_[(first + j) * std::size_t(taps) + std::size_t(t)] = acc[std::size_t(t) * kRun + j];
        if (diff_bias_) diff_bias_[first + j] = bias[j];
      }
    }
  }

  Conv2dConfig c_{};
  converter image_, dy_;
  float* diff_weights_ = nullptr;
  float* diff_bias_ = nullptr;
  std::vector<float> sums_;  ///< run_sums() floats per run of kRun channels
};

}  // namespace sinew::backend::onednn
