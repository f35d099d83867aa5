// sinew/backend/onednn/lowered_backward_weights.hpp: a bf16 convolution's weight gradient on a small output
// image as one matrix product over the input's patches, written straight into the flat gradient buffer.
//
// oneDNN's bf16 backward weights (jit_bf16:avx512_core_bf16 in 2.6 and 3.7) runs ResNet-18's 512-channel 3x3 layers
// on 4x4 images at half the rate of its own forward on them (a reduction over only the batch's 672 output pixels).
// The same sums as one product, dW[O, C*K*K] = dy^T [O, pixels] x patches [pixels, C*K*K], run on oneDNN's bf16
// matmul (brgemm) in about three quarters of the time (figures: bench/README.md, "Why the kernels are as they
// are"). The patches are gathered from the forward's input in bf16, a row per (input channel, tap) so that the
// product's rows are PyTorch's [Out, In, K, K]: the gradient lands in the flat buffer with no reorder after it.
// conv2d_op takes this form for bf16 layers with kernels of at most 3x3 onto outputs of at most 4x4 pixels
// (conv2d.hpp: conv_lowers_backward_weights; ResNet-50's strided 1x1 projections there too). Its stride-1 1x1
// layers there, whose weight gradient oneDNN's bf16 kernels took twice as long on, are not conv2d_op's: they
// run whole as the bf16 inner product over the image (lowered_conv2d.hpp's one bf16 form). lowered_conv2d.hpp
// lowers the other layers whole in f32 only, where oneDNN runs AVX2 kernels; bf16 runs on AVX-512 or AMX ones,
// whose forward and backward data stay direct.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "sinew/backend/generic/node_config.hpp"
#include "sinew/backend/onednn/common.hpp"
#include "sinew/core/parallel.hpp"

namespace sinew::backend::onednn {

/// For each output pixel and tap of convolution `c`, sources[(pixel * K + ky) * K + kx]: the input pixel
/// (row-major in its image) the tap reads, or -1 where it meets padding. One table for every lowered form.
inline std::vector<int> patch_sources(const Conv2dConfig& c) {
  const int k = c.kernel;
  std::vector<int> sources(std::size_t(c.out_h * c.out_w * k * k), -1);
  for (int oy = 0; oy < c.out_h; ++oy)
    for (int ox = 0; ox < c.out_w; ++ox)
      for (int ky = 0; ky < k; ++ky)
        for (int kx = 0; kx < k; ++kx) {
          const int iy = oy * c.stride - c.padding + ky, ix = ox * c.stride - c.padding + kx;
          if (iy >= 0 && iy < c.in_h && ix >= 0 && ix < c.in_w)
            sources[std::size_t(((oy * c.out_w + ox) * k + ky) * k + kx)] = iy * c.in_w + ix;
        }
  return sources;
}

/// A convolution's backward weights as the product above, in place of oneDNN's primitive (weighted_layer.hpp).
class lowered_backward_weights {
 public:
  /// Builds the product for a dense (ungrouped, undilated), bias-free convolution `c` whose forward reads `src_md`
  /// and writes `dst_md` (the layouts oneDNN chose), its gradient written to `diff_weights` ([Out, In, K, K]).
  void setup(context& ctx, const Conv2dConfig& c, const desc& src_md, const desc& dst_md, float* diff_weights) {
    c.require_dense("lowered_backward_weights", "conv2d_op takes it for dense layers only");
    if (c.bias)
      throw backend_error("lowered_backward_weights: a convolution with a bias keeps oneDNN's backward weights");
    c_ = c;
    build_runs();
    const auto& eng = ctx.engine();
    const memory::dim pixels = memory::dim(c.batch) * c.out_h * c.out_w, taps = memory::dim(c.kernel) * c.kernel,
                      columns = memory::dim(c.in_c) * taps;
    image_.setup(ctx, src_md, desc({c.batch, c.in_c, c.in_h, c.in_w}, dt::bf16, tag::nchw));
    dy_.setup(ctx, dst_md, desc({c.batch, c.out_c, c.out_h, c.out_w}, dt::bf16, tag::nhwc));
    // patches^T, stored [In * K * K, pixels]: row (channel, tap) holds what that tap reads at each output pixel.
    patches_t_ = memory(desc({columns, pixels}, dt::bf16, tag::ab), eng);
    std::memset(patches_t_.get_data_handle(), 0, patches_t_.get_desc().get_size());  // padding stays zero
    const desc a({c.out_c, pixels}, dt::bf16, dims{1, c.out_c});   // dy^T, read from the NHWC gradient
    const desc b({pixels, columns}, dt::bf16, dims{1, pixels});    // the patches, read from their transpose
    const desc out({c.out_c, columns}, dt::f32, tag::ab);          // [Out, In * K * K]: PyTorch's weights
    const auto pd = checked("conv2d backward weights as matmul",
                            [&] { return compat::forward<dnnl::matmul>(eng, {}, a, b, out); });
    matmul_ = dnnl::matmul(pd);
    dy_image_ = memory(a, eng, DNNL_MEMORY_NONE);
    args_ = {{DNNL_ARG_SRC, dy_image_},
             {DNNL_ARG_WEIGHTS, memory(b, eng, patches_t_.get_data_handle())},
             {DNNL_ARG_DST, memory(out, eng, diff_weights)}};
    taken_ = true;
  }
  /// Whether backward weights runs as the product.
  explicit operator bool() const noexcept { return taken_; }

  /// `src`: the forward's input in the layout it read; `diff_dst`: the output gradient in the forward's output layout.
  void run(context& ctx, const memory& src, const memory& diff_dst) {
    gather(image_(ctx, src));
    const memory& dy = dy_(ctx, diff_dst);
    if (void* h = dy.get_data_handle(); h != dy_handle_) dy_image_.set_data_handle(dy_handle_ = h);
    onednn::run(ctx, matmul_, args_);
  }

 private:
  // For each tap, the runs of output pixels it reads the image at: one per output row, `count` pixels from
  // `out` on, reading from `in` on every stride-th input pixel (the patches' padding is the rest, zero).
  struct run_of_pixels {
    int out, in, count;
  };
  void build_runs() {
    const std::vector<int> sources = patch_sources(c_);
    const int k = c_.kernel, taps = k * k;
    runs_.assign(std::size_t(taps), {});
    for (int tap = 0; tap < taps; ++tap)
      for (int oy = 0; oy < c_.out_h; ++oy) {
        run_of_pixels r{-1, 0, 0};
        for (int ox = 0; ox < c_.out_w; ++ox)
          if (const int s = sources[std::size_t((oy * c_.out_w + ox) * taps + tap)]; s >= 0) {
            if (r.count++ == 0) r.out = oy * c_.out_w + ox, r.in = s;
          }
        if (r.count > 0) runs_[std::size_t(tap)].push_back(r);
      }
  }

  // patches^T[(ch, tap)][(n, pixel)] = image[n][ch][source of (pixel, tap)], image NCHW bf16; channels per range.
  void gather(const memory& image) {
    using bf16_bits = std::uint16_t;
    const std::size_t taps = runs_.size(), out_pixels = std::size_t(c_.out_h) * c_.out_w,
                      in_pixels = std::size_t(c_.in_h) * c_.in_w, channels = std::size_t(c_.in_c),
                      batch = std::size_t(c_.batch), row = batch * out_pixels, stride = std::size_t(c_.stride);
    const auto* in = static_cast<const bf16_bits*>(image.get_data_handle());
    auto* out = static_cast<bf16_bits*>(patches_t_.get_data_handle());
    parallel_ranges(channels, [&](std::size_t ch_begin, std::size_t ch_end) {
      for (std::size_t ch = ch_begin; ch < ch_end; ++ch)
        for (std::size_t tap = 0; tap < taps; ++tap) {
          bf16_bits* const dst = out + (ch * taps + tap) * row;
          for (std::size_t n = 0; n < batch; ++n) {
            const bf16_bits* const plane = in + (n * channels + ch) * in_pixels;
            bf16_bits* const image_row = dst + n * out_pixels;
            for (const run_of_pixels& r : runs_[tap])
              for (int i = 0; i < r.count; ++i)
                image_row[r.out + i] = plane[std::size_t(r.in) + std::size_t(i) * stride];
          }
        }
    }, 1, 1);
  }

  bool taken_ = false;
  Conv2dConfig c_{};
  std::vector<std::vector<run_of_pixels>> runs_;
  converter image_, dy_;
  memory patches_t_, dy_image_;
  void* dy_handle_ = nullptr;
  dnnl::matmul matmul_;
  bound_args args_;
};

}  // namespace sinew::backend::onednn
