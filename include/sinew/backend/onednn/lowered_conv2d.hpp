// sinew/backend/onednn/lowered_conv2d.hpp: Conv2d with a small output image, as one inner product over the
// input's patches (im2col).
//
// oneDNN 2.6's AVX2 direct convolutions run the late layers of CIFAR-sized and 64x64 inputs (3x3 kernels on 3x3 to
// 8x8 images: AlexNet's last three, VGG's and ResNet's 4x4 and wide 8x8 stages) at 40-90 GFLOP/s at batch 42, and the
// 1x1 stride-2 projection from 2x2 to 1x1 at about 40; the same work as one matrix product, a row per output pixel
// of the batch and a column per (tap, input channel), runs on its gemm at 105-150 (figures: bench/README.md, "Why
// the kernels are as they are"). So such a layer gathers, before each forward, every output pixel's patch of the
// input (NHWC, so that each tap is one contiguous copy of the input channels) into that matrix, and runs
// oneDNN's inner product on it with the kernel as the weights (reordered from PyTorch's [Out, In, K, K] to
// [Out, K, K, In], the patch's order); backward data's patch gradients are added back onto the input pixels
// they came from. With fewer input channels than kernel columns (a first layer: AlexNet's 3 channels beside its
// 11x11 kernel) a tap's copy would be a few floats, so the patches are gathered from the NCHW image a kernel row
// at a time instead, in PyTorch's [In, K, K] order, and the weights need no reorder (conv_gathers_kernel_rows);
// such a layer is lowered where oneDNN would run it as its gemm-based convolution (conv2d.hpp:
// lowered_where_gemm_conv2d_op). Taps that meet padding stay zero in the matrix, written once at set-up; a 1x1
// kernel at stride 1 gathers nothing, its matrix being the NHWC image itself, nor adds back. The output is NHWC:
// the product's rows are the batch's output pixels in order. The node picks this op by its shape at compile time
// (conv2d.hpp's conv2d_op_for) and, for 2x2 and 3x3 kernels, by the kernels oneDNN runs at set-up
// (lowered_on_avx2_conv2d_op); results equal the direct convolution's up to summation order. OneDnnBf16 runs the
// 1x1 stride-1 form in bf16 (onednn_bf16.hpp: lowered_conv2d_bf16_op); the gathered forms are f32 only.
#pragma once

#include <algorithm>
#include <cstring>
#include <vector>

#include "sinew/backend/generic/node_config.hpp"
#include "sinew/backend/onednn/weighted_layer.hpp"
#include "sinew/core/elementwise.hpp"
#include "sinew/core/parallel.hpp"

namespace sinew::backend::onednn {

// Small 2x2 and 3x3 kernels are lowered (conv2d.hpp: lowered_on_avx2_conv2d_op) where oneDNN runs its AVX2 kernels (an
// AVX2 CPU, or oneDNN capped by ONEDNN_MAX_CPU_ISA=AVX2), not where it runs AVX-512 ones. The lowering was made for
// oneDNN 2.6's AVX2 direct convolutions, whose late layers are slow; its AVX-512 ones ran AlexNet, ResNet-18, ResNet-50
// and VGG-16-BN 4-17% faster unlowered (bench/results/2026-11-30-zen4-avx512-unlowered). The choice follows the kernels
// oneDNN runs, not the instructions sinew was compiled for: a portable build on an AVX-512 CPU runs direct, and an
// AVX-512 build capped to AVX2 lowers as an AVX2 CPU does (on a Zen 4 so capped the two forms tied:
// bench/results/2026-12-01-zen4-lowering-by-isa). (An AVX-512 build once lowered too, and VGG-16-BN's golden comparison
// then failed by 1.4e-2: float32 rounding in another summation order flipped a max pool's near-tie in the golden batch,
// tests/nets/test_lenet5_alexnet_vgg.cpp. That was no fault of the lowering.)

/// Whether a convolution with an out_h x out_w output and out_c channels may run as lowered_conv2d_op: a 2x2 or 3x3
/// kernel on an output of at most 4x4 pixels, or of at most 8x8 with 128 output channels or more (where oneDNN
/// runs AVX2 kernels, at set-up: lowered_on_avx2_conv2d_op), a 1x1 kernel with a stride on an output of at most
/// 2x2, or at stride 1 on one of at most 4x4 (both always). The patches cost a copy per input pixel and tap whatever
/// the output channels, the product a multiply-add per output channel, so with few channels the copy weighs: under
/// oneDNN 2.6's AVX2 kernels (a Zen 4 capped to them) ResNet-18's 64-channel blocks on 8x8 took 8.1 ms a step
/// lowered against 6.4 direct, and keeping them direct made ResNet-18 2-3.5% and ResNet-50 1.4-3% faster
/// (bench/results/2026-12-01-zen4-avx2-lowering-by-channels); 256 channels on 8x8 gained lowered on a Zen 3. A 1x1
/// kernel at stride 1 copies nothing: its patches are the NHWC image itself, read in place. oneDNN 2.6's AVX-512 1x1
/// kernels ran ResNet-50's layers on 4x4 and 2x2 images (32x32 inputs) with backward weights 32.7 ms a step against
/// 28.7 as the product, and the network 1.12x faster so (median of 5 rounds, 1.06-1.17x; Zen 5,
/// bench/results/2026-12-02-zen5-pointwise-as-product);
/// under the AVX2 cap the two forms tied; on 8x8 (ResNet-50's first stage) the product gained nothing measurable.
/// Strided, oneDNN's 1x1 kernels ran at 40 GFLOP/s from 2x2 to 1x1 but as fast as the product from 8x8 to 4x4, and
/// oneDNN 2.6's AVX-512 kernels (jit_1x1, brgconv_1x1) ran ResNet-50's projection from 2x2 to 1x1 at batch 42 at
/// 60-100 GFLOP/s each way against about 190 for the product (Zen 4, two threads): its patches are a copy of the
/// pixels it reads. A larger kernel copies each input pixel into more patches (25 for 5x5), and oneDNN ran AlexNet's
/// 5x5 kernel on 7x7 as fast as the product. Asked after small_conv2d_op's test.
constexpr bool conv_is_lowered(int out_h, int out_w, int kernel, int stride, int out_c) noexcept {
  const int pixels = out_h * out_w;
  if (kernel > 1) return kernel <= 3 && (pixels <= 16 || (pixels <= 64 && out_c >= 128));
  return pixels <= (stride > 1 ? 4 : 16);
}

/// Whether a lowered convolution's patches are its NHWC input image itself, read in place with nothing gathered or
/// added back: a 1x1 kernel at stride 1 without padding. The one form OneDnnBf16 lowers (lowered_conv2d_bf16_op).
constexpr bool conv_reads_image_in_place(int kernel, int stride, int padding) noexcept {
  return kernel == 1 && stride == 1 && padding == 0;
}

/// Whether a lowered convolution gathers its patches from the NCHW image a kernel row (`kernel` floats of one
/// channel) at a time rather than from the NHWC image a tap (`in_c` floats) at a time: where a kernel row is the
/// longer copy. AlexNet's first layer (3 channels, 11x11 at stride 4, 64x64 -> 15x15), which oneDNN 2.6 capped to
/// AVX2 runs only as its gemm-based convolution (an im2col and a product an image at a time, at 102 GFLOP/s),
/// took 2.88 ms so against 4.30 direct (gather 0.60, product 2.28), its weights' gradient as the product 2.0 ms
/// against oneDNN's 2.2 (Zen 5, bench/results/2026-12-02-zen5-alexnet-first-layer-avx2).
constexpr bool conv_gathers_kernel_rows(int in_c, int kernel) noexcept { return in_c < kernel; }

/// Whether conv_is_lowered's choice is made at set-up by the kernels oneDNN runs (onednn_runs_avx512() false): for
/// 2x2 and 3x3 kernels; a 1x1 kernel is lowered wherever conv_is_lowered says so.
constexpr bool conv_lowering_follows_isa(int kernel) noexcept { return kernel > 1; }

class lowered_conv2d_op : public conv_as_inner_product {
  using base = conv_as_inner_product;

 public:
  template <NodeType N>
  void setup(context& ctx, const desc& src_md, int batch, ParamSlots p, bool need_diff_src) {
    setup(ctx, src_md, conv2d_config<N>(batch), p, need_diff_src);
  }

  /// `compute`: the type the product reads its patches and weights in, f32 or bf16 (as conv2d_op's; bf16 for a 1x1
  /// kernel at stride 1 only, whose patches are the image: the gather and adding back are f32).
  void setup(context& ctx, const desc& src_md, const Conv2dConfig& c, ParamSlots p, bool need_diff_src,
             dt compute = dt::f32) {
    using namespace dnnl;
    c.require_dense("lowered_conv2d_op", "conv2d_op_for sends the others to conv2d_op");
    c_ = c;
    identity_ = conv_reads_image_in_place(c.kernel, c.stride, c.padding);
    const bool bf16 = compute == dt::bf16;
    if (bf16 && !identity_)
      throw backend_error("lowered_conv2d_op: in bf16 only a 1x1 kernel at stride 1 without padding is lowered "
                          "(its patches are the image); OneDnnBf16 runs the others as conv2d_bf16_op");
    kernel_rows_ = !identity_ && conv_gathers_kernel_rows(c.in_c, c.kernel);
    if (!identity_) copies_ = patch_copies(c, kernel_rows_);
    image_floats_ = std::size_t(c.in_c) * std::size_t(c.in_h) * std::size_t(c.in_w);
    patch_floats_ = std::size_t(c.out_h) * std::size_t(c.out_w) * std::size_t(c.in_c) * std::size_t(c.kernel) *
                    std::size_t(c.kernel);
    const auto& eng = ctx.engine();
    const memory::dim rows = memory::dim(c.batch) * c.out_h * c.out_w;  // one per output pixel of the batch
    const dims image{c.batch, c.in_c, c.in_h, c.in_w}, w_dims{c.out_c, c.in_c, c.kernel, c.kernel};
    // In bf16, as conv2d_op: the output bf16 unless an activation follows in the layer, the output gradient bf16,
    // the input gradient in the input's type, the weights' gradient f32.
    const dt out = bf16 && c.act == simd::activation::none ? dt::bf16 : dt::f32;
    const dt diff_in = bf16 && compat::data_type_of(src_md) == dt::bf16 ? dt::bf16 : dt::f32;
    // The image NHWC and [rows, In, K, K] laid out as [rows, K, K, In], the kernel in the same order (oneDNN's
    // inner product reads both alike); gathered a kernel row at a time, the image NCHW and both in PyTorch's order.
    const tag image_layout = kernel_rows_ ? tag::nchw : tag::nhwc, patch_layout = image_layout;
    const tag w_layout = kernel_rows_ ? tag::oihw : tag::ohwi;
    const desc image_in(image, compute, image_layout), diff_image(image, diff_in, image_layout);
    const dims patch_dims{rows, c.in_c, c.kernel, c.kernel};
    const desc patches(patch_dims, compute, patch_layout), diff_patches(patch_dims, diff_in, patch_layout);
    const desc w_patch(w_dims, compute, w_layout), diff_w_patch(w_dims, dt::f32, w_layout);
    const desc user_w(w_dims, dt::f32, tag::oihw);
    // The rows are the same bytes as the NHWC output image.
    const desc dst_nc({rows, c.out_c}, out, tag::nc), diff_dst_nc({rows, c.out_c}, compute, tag::nc);
    const desc bias = c.bias ? desc({c.out_c}, dt::f32, tag::x) : desc();
    const auto fwd = checked("conv2d (lowered) forward", [&] {
      return compat::forward<inner_product_forward>(eng, fused_activation::attr(c.act), prop_kind::forward_training,
                                                    patches, w_patch, bias, dst_nc);
    });
    const auto bww = checked("conv2d (lowered) backward weights", [&] {
      return compat::backward<inner_product_backward_weights>(eng, fwd, patches, diff_w_patch, bias, diff_dst_nc);
    });
    std::optional<backward_data_pd> bwd;
    if (need_diff_src)
      bwd = checked("conv2d (lowered) backward data", [&] {
        return compat::backward<inner_product_backward_data>(eng, fwd, diff_patches, w_patch, diff_dst_nc);
      });
    patches_ = identity_ ? memory(patches, eng, DNNL_MEMORY_NONE) : memory(patches, eng);
    // The taps on padding are never written again.
    if (!identity_) std::memset(patches_.get_data_handle(), 0, patches.get_size());
    finish_setup(ctx, patches, fwd, bww, bwd, user_w, bias, c.act, p);

    image_in_.setup(ctx, src_md, image_in);
    set_output_image(ctx, desc({c.batch, c.out_c, c.out_h, c.out_w}, out, tag::nhwc));
    diff_image_src_ = !need_diff_src ? memory()
                      : identity_    ? memory(diff_image, eng, base::diff_src().get_data_handle())
                                     : memory(diff_image, eng);
  }

  /// Whether the patches are gathered from the NCHW image a kernel row at a time (conv_gathers_kernel_rows).
  bool gathers_kernel_rows() const noexcept { return kernel_rows_; }

  desc diff_src_desc() const { return diff_image_src_ ? diff_image_src_.get_desc() : desc(); }
  const memory& diff_src() const noexcept { return diff_image_src_; }

  void forward(context& ctx, const memory& src) { forward(ctx, src, metrics::no_probe); }
  void backward(context& ctx, const memory& src, const memory& diff_dst) {
    backward(ctx, src, diff_dst, metrics::no_probe);
  }

  /// Profiled as the convolution it is: the gather and the inner product to its forward, the adding back to its
  /// backward data (resumed, not begun again: each pass counts one call a step). The output gradient's
  /// conversion, if any, counts where weighted_layer's does.
  template <class Probe>
  void forward(context& ctx, const memory& src, Probe& probe) {
    inner_product_as_convolution<Probe> p{probe};
    p.begin(metrics::OpKind::convolution);
    if (const memory& image = image_in_(ctx, src); identity_)
      patches_.set_data_handle(image.get_data_handle());
    else
      gather(image);
    base::forward(ctx, patches_, p, weights_cache_.take());
  }

  template <class Probe>
  void backward(context& ctx, const memory&, const memory& diff_dst, Probe& probe) {
    inner_product_as_convolution<Probe> p{probe};
    base::backward(ctx, patches_, diff_rows(ctx, diff_dst), p);
    if (diff_image_src_ && !identity_) {
      p.resume(metrics::OpKind::convolution_backward_data);
      scatter(base::diff_src(), diff_image_src_);
    }
  }

 private:
  // One contiguous copy of the gather: `count` floats from offset `in` of an image (NHWC, or NCHW where gathered a
  // kernel row at a time) to offset `out` of that image's patch rows. Adding back reads the same copies backwards.
  struct patch_copy {
    int out, in, count;
  };

  // The copies of one image's patches, in the order the patch rows are written, each as long as both sides stay
  // contiguous: a tap's input channels from NHWC, and the taps of a kernel row that meet the image beside them
  // (padding lies at a row's ends only); from NCHW, a kernel row of one channel.
  static std::vector<patch_copy> patch_copies(const Conv2dConfig& c, bool kernel_rows) {
    const std::vector<int> sources = patch_sources(c);
    const int taps = c.kernel * c.kernel, ch = c.in_c, plane = c.in_h * c.in_w, patch = ch * taps;
    std::vector<patch_copy> copies;
    const auto copy = [&](int out, int in) {
      if (!copies.empty() && copies.back().out + copies.back().count == out &&
          copies.back().in + copies.back().count == in)
        ++copies.back().count;
      else
        copies.push_back({out, in, 1});
    };
    for (int pixel = 0; pixel < c.out_h * c.out_w; ++pixel) {
      const int* const source = sources.data() + std::size_t(pixel) * std::size_t(taps);
      if (kernel_rows) {  // patch [In, K, K] from the NCHW image
        for (int i = 0; i < ch; ++i)
          for (int tap = 0; tap < taps; ++tap)
            if (source[tap] >= 0) copy(pixel * patch + i * taps + tap, i * plane + source[tap]);
      } else {  // patch [K, K, In] from the NHWC image
        for (int tap = 0; tap < taps; ++tap)
          for (int i = 0; i < ch; ++i)
            if (source[tap] >= 0) copy(pixel * patch + tap * ch + i, source[tap] * ch + i);
      }
    }
    return copies;
  }

  // The patch rows of the batch from the image, an image per range.
  void gather(const memory& image) {
    const float* in = static_cast<const float*>(image.get_data_handle());
    float* out = static_cast<float*>(patches_.get_data_handle());
    parallel_ranges(std::size_t(c_.batch), [&](std::size_t n_begin, std::size_t n_end) {
      for (std::size_t n = n_begin; n < n_end; ++n) {
        const float* img = in + n * image_floats_;
        float* rows = out + n * patch_floats_;
        for (const patch_copy& r : copies_)
          std::memcpy(rows + std::size_t(r.out), img + std::size_t(r.in), std::size_t(r.count) * sizeof(float));
      }
    }, 1, 1);
  }

  // diff_image = the sum, for each input pixel and channel, of the patch gradients read from it; an image per
  // range.
  void scatter(const memory& diff_patches, const memory& diff_image) {
    const float* in = static_cast<const float*>(diff_patches.get_data_handle());
    float* out = static_cast<float*>(diff_image.get_data_handle());
    parallel_ranges(std::size_t(c_.batch), [&](std::size_t n_begin, std::size_t n_end) {
      for (std::size_t n = n_begin; n < n_end; ++n) {
        float* img = out + n * image_floats_;
        const float* rows = in + n * patch_floats_;
        std::fill_n(img, image_floats_, 0.0f);
        for (const patch_copy& r : copies_) {
          float* px = img + std::size_t(r.in);
          simd::add(px, rows + std::size_t(r.out), px, std::size_t(r.count));
        }
      }
    }, 1, 1);
  }

  Conv2dConfig c_{};
  std::vector<patch_copy> copies_;  // patch_copies(c_, kernel_rows_); empty where the patches are the image
  std::size_t image_floats_ = 0;  // one image of the batch
  std::size_t patch_floats_ = 0;  // one image's patch rows
  bool identity_ = false;  // the patches are the image (a 1x1 kernel at stride 1)
  bool kernel_rows_ = false;  // gathered from the NCHW image a kernel row at a time
  memory patches_;  // the forward's matrix, kept for backward weights
  memory diff_image_src_;
  converter image_in_;
};

}  // namespace sinew::backend::onednn
