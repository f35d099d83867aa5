// sinew/backend/onednn/small_conv2d.hpp: Conv2d over an image smaller than its kernel (or as large, with one output
// pixel), as one inner product.
//
// On a 2x2 image a 3x3, padding-1 convolution's every output pixel reads every input pixel, through a different
// tap. Written out as a dense matrix from the whole input image (C x H x W) to the whole output image
// (O x OH x OW), it holds exactly the multiplications that meet the image; the direct convolution computes all
// nine taps at every position, 2.25 times as many, and oneDNN 2.6 runs its backward weights on a slow gemm
// kernel on ResNet's and VGG's 2x2 stages (figures: bench/README.md, "Why the kernels are as they are"). So such
// a layer becomes an inner product with that matrix, expanded from the kernel before each forward; backward folds
// the matrix's gradient back onto the kernel's taps. The node picks this op at compile time (onednn.hpp:
// small_image<N>); results equal the direct convolution's up to summation order.
#pragma once

#include <algorithm>
#include <cstring>
#include <ranges>
#include <vector>

#include "sinew/backend/generic/node_config.hpp"
#include "sinew/backend/onednn/weighted_layer.hpp"
#include "sinew/core/parallel.hpp"
#include "sinew/tensor/buffer.hpp"

namespace sinew::backend::onednn {

/// Whether a convolution over an In image with kernel K runs as this dense matrix (In pixels x Out pixels per
/// channel pair): where it holds fewer multiplications than the kernel's taps at every output pixel (an image
/// with fewer pixels than the kernel has taps), or as many with one output pixel, where the matrix is the kernel's
/// taps that meet the image and the layer an inner product outright. oneDNN 2.6's AVX2 convolutions ran such
/// layers (ResNet-50's last stage on 32x32 inputs: 1x1 kernels on 1x1 images, the 3x3 stride-2 one on 2x2) at
/// 9-35 GFLOP/s at batch 42, against 80-110 for the inner product. With as many multiplications and several
/// output pixels (a 3x3 kernel on a 3x3 image) the matrix's one row per image is the worse product:
/// lowered_conv2d_op's patches give it a row per output pixel.
constexpr bool conv_is_small_image(int in_h, int in_w, int out_h, int out_w, int kernel) noexcept {
  const int pixels = in_h * in_w, taps = kernel * kernel;
  return pixels < taps || (pixels == taps && out_h * out_w == 1);
}

class small_conv2d_op : public conv_as_inner_product {
  using base = conv_as_inner_product;

 public:
  template <NodeType N>
  void setup(context& ctx, const desc& src_md, int batch, ParamSlots p, bool need_diff_src) {
    setup(ctx, src_md, conv2d_config<N>(batch), p, need_diff_src);
  }

  /// `compute`: the type of the input and of the matrix the primitives read (f32, or bf16 as conv2d_op says).
  void setup(context& ctx, const desc& src_md, const Conv2dConfig& c, ParamSlots p, bool need_diff_src,
             dt compute = dt::f32) {
    using namespace dnnl;
    c.require_dense("small_conv2d_op", "conv2d_op_for sends the others to conv2d_op");
    c_ = c;
    user_ = p;
    build_taps();
    const auto& eng = ctx.engine();
    const memory::dim rows = memory::dim(c.out_c) * c.out_h * c.out_w;  // one per output value of an image
    const std::size_t cols = std::size_t(c.in_c) * std::size_t(c.in_h * c.in_w);
    // Where the matrix is the kernel itself (one output pixel reading every input pixel through the tap of the
    // same position: a 1x1 kernel on a 1x1 image), the primitives read and write the layer's own slots. Expanding
    // and folding it there only copied it, twice a step, at memory speed: on ResNet-50's last stage (five such
    // 512 x 2048 matrices) the copies took longer than the products.
    kernel_is_matrix_ = std::ranges::equal(taps_, std::views::iota(0, c.in_h * c.in_w)) && c.out_h * c.out_w == 1;
    ParamSlots expanded = p;
    if (!kernel_is_matrix_) {
      matrix_ = AlignedBuffer<float>(std::size_t(rows) * cols);
      diff_matrix_ = AlignedBuffer<float>(std::size_t(rows) * cols);
      if (c.bias) bias_ = AlignedBuffer<float>(std::size_t(rows)), diff_bias_ = AlignedBuffer<float>(std::size_t(rows));
      expanded = {matrix_.data(), c.bias ? bias_.data() : nullptr, diff_matrix_.data(),
                  c.bias ? diff_bias_.data() : nullptr, nullptr};
    }

    const dims src_dims{c.batch, c.in_c, c.in_h, c.in_w}, w_dims{rows, c.in_c, c.in_h, c.in_w};
    // The matrix row-major for all three primitives: left to choose, the forward one took it column-major and
    // the backward ones row-major, which cost two reorders of it per step.
    const desc src_any(src_dims, compute, tag::any), w_rows(w_dims, compute, tag::oihw);
    const desc user_w(w_dims, dt::f32, tag::oihw), diff_src_any(src_dims, dt::f32, tag::any);
    const desc dst_nc({c.batch, rows}, dt::f32, tag::nc);  // the same bytes as NCHW output
    const desc diff_dst_nc({c.batch, rows}, compute, tag::nc);
    const desc bias = c.bias ? desc({rows}, dt::f32, tag::x) : desc();
    const auto fwd = checked("conv2d (small image) forward", [&] {
      return compat::forward<inner_product_forward>(eng, fused_activation::attr(c.act), prop_kind::forward_training,
                                                    src_any, w_rows, bias, dst_nc);
    });
    const auto bww = checked("conv2d (small image) backward weights", [&] {
      return compat::backward<inner_product_backward_weights>(eng, fwd, src_any, user_w, bias, diff_dst_nc);
    });
    std::optional<backward_data_pd> bwd;
    if (need_diff_src)
      bwd = checked("conv2d (small image) backward data",
                    [&] { return compat::backward<inner_product_backward_data>(eng, fwd, diff_src_any, w_rows, diff_dst_nc); });
    finish_setup(ctx, src_md, fwd, bww, bwd, user_w, bias, c.act, expanded);

    // One output pixel: NHWC names the same bytes as NCHW, and oneDNN 2.6 runs batch norm and pooling on NHWC
    // with jit kernels but on NCHW with plain loops (ncsp_bnorm: 5 ms a step on ResNet-50's last stage, Zen 3).
    set_output_image(ctx, desc({c.batch, c.out_c, c.out_h, c.out_w}, dt::f32,
                               c.out_h * c.out_w == 1 ? tag::nhwc : tag::nchw));
  }

  /// Whether the primitives read the layer's kernel and write its gradient in place (the kernel is the matrix).
  bool reads_kernel_in_place() const noexcept { return kernel_is_matrix_; }

  void forward(context& ctx, const memory& src) { forward(ctx, src, metrics::no_probe); }
  void backward(context& ctx, const memory& src, const memory& diff_dst) {
    backward(ctx, src, diff_dst, metrics::no_probe);
  }

  /// Profiled as the convolution it is: the inner product's parts and the expansion and folding of the matrix
  /// go to the convolution's kinds.
  template <class Probe>
  void forward(context& ctx, const memory& src, Probe& probe) {
    inner_product_as_convolution<Probe> p{probe};
    p.begin(metrics::OpKind::convolution);
    const bool derive = weights_cache_.take();
    if (derive && !kernel_is_matrix_) expand();
    base::forward(ctx, src, p, derive);
  }

  template <class Probe>
  void backward(context& ctx, const memory& src, const memory& diff_dst, Probe& probe) {
    inner_product_as_convolution<Probe> p{probe};
    base::backward(ctx, src, diff_rows(ctx, diff_dst), p);
    if (kernel_is_matrix_) return;
    p.resume(metrics::OpKind::convolution_backward_weights);
    fold();
  }

 private:
  // The kernel tap that joins input pixel (iy, ix) to output pixel (oy, ox) along one dimension, or -1.
  int tap(int out_pos, int in_pos) const noexcept {
    const int k = in_pos - out_pos * c_.stride + c_.padding;
    return k >= 0 && k < c_.kernel ? k : -1;
  }

  // The tap joining output pixel op to input pixel ip (row-major positions), ky * kernel + kx, or -1.
  void build_taps() {
    const int ohw = c_.out_h * c_.out_w, ihw = c_.in_h * c_.in_w;
    taps_.assign(std::size_t(ohw * ihw), -1);
    for (int op = 0; op < ohw; ++op)
      for (int ip = 0; ip < ihw; ++ip) {
        const int ky = tap(op / c_.out_w, ip / c_.in_w), kx = tap(op % c_.out_w, ip % c_.in_w);
        if (ky >= 0 && kx >= 0) taps_[std::size_t(op * ihw + ip)] = ky * c_.kernel + kx;
      }
  }

  // matrix[(o, oy, ox)][(i, iy, ix)] = weight[o][i][ky][kx] for the tap joining the two pixels, else zero.
  void expand() {
    const std::size_t ic = std::size_t(c_.in_c), ohw = std::size_t(c_.out_h * c_.out_w),
                      ihw = std::size_t(c_.in_h * c_.in_w), taps = std::size_t(c_.kernel * c_.kernel);
    const float* w = user_.weights;
    float* m = matrix_.data();
    parallel_ranges(std::size_t(c_.out_c), [&](std::size_t o_begin, std::size_t o_end) {
      for (std::size_t o = o_begin; o < o_end; ++o)
        for (std::size_t op = 0; op < ohw; ++op) {
          float* row = m + (o * ohw + op) * ic * ihw;
          const int* t = taps_.data() + op * ihw;
          for (std::size_t i = 0; i < ic; ++i) {
            const float* wk = w + (o * ic + i) * taps;
            for (std::size_t ip = 0; ip < ihw; ++ip) row[i * ihw + ip] = t[ip] >= 0 ? wk[t[ip]] : 0.0f;
          }
        }
    }, 1, 1);
    if (c_.bias)
      for (std::size_t o = 0; o < std::size_t(c_.out_c); ++o) std::fill_n(bias_.data() + o * ohw, ohw, user_.bias[o]);
  }

  // diff_weight[o][i][ky][kx] = the sum over the pixel pairs that tap joins; diff_bias[o] = the sum over pixels.
  void fold() {
    const std::size_t ic = std::size_t(c_.in_c), ohw = std::size_t(c_.out_h * c_.out_w),
                      ihw = std::size_t(c_.in_h * c_.in_w), taps = std::size_t(c_.kernel * c_.kernel);
    const float* dm = diff_matrix_.data();
    float* dw = user_.diff_weights;
    parallel_ranges(std::size_t(c_.out_c), [&](std::size_t o_begin, std::size_t o_end) {
      for (std::size_t o = o_begin; o < o_end; ++o) {
        float* dwo = dw + o * ic * taps;
        std::fill_n(dwo, ic * taps, 0.0f);
        for (std::size_t op = 0; op < ohw; ++op) {
          const float* row = dm + (o * ohw + op) * ic * ihw;
          const int* t = taps_.data() + op * ihw;
          for (std::size_t i = 0; i < ic; ++i)
            for (std::size_t ip = 0; ip < ihw; ++ip)
              if (t[ip] >= 0) dwo[i * taps + std::size_t(t[ip])] += row[i * ihw + ip];
        }
      }
    }, 1, 1);
    if (c_.bias)
      for (std::size_t o = 0; o < std::size_t(c_.out_c); ++o) {
        float s = 0;
        for (std::size_t op = 0; op < ohw; ++op) s += diff_bias_.data()[o * ohw + op];
        user_.diff_bias[o] = s;
      }
  }

  Conv2dConfig c_{};
  ParamSlots user_;  // the layer's kernel and bias in the flat buffers (PyTorch's layout)
  std::vector<int> taps_;  // [output pixel][input pixel] -> tap, or -1
  bool kernel_is_matrix_ = false;  // the primitives work on the layer's slots, nothing expanded or folded
  AlignedBuffer<float> matrix_, diff_matrix_, bias_, diff_bias_;
};

}  // namespace sinew::backend::onednn
