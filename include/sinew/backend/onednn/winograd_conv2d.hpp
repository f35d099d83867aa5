// sinew/backend/onednn/winograd_conv2d.hpp: a 3x3 convolution at stride 1 with padding 1 on a small image, as
// Winograd's F(2x2, 3x3): sinew's transforms (backend/simd/winograd.hpp) around 16 matrix products on oneDNN's
// batched matmul.
//
// The algorithm does 2.25 times fewer multiply-adds than the direct convolution. oneDNN 2.6 has it for AVX-512
// only (convolution_winograd); oneDNN 3 removed it. Here the products run on oneDNN's matmul and the transforms are
// a few additions per value, each a pass over the transformed tiles (16 floats per tile and channel, 2.75 MB for
// a 64-channel layer on 8x8 at batch 42), so what the products save the passes partly spend. Against oneDNN's
// AVX2 direct kernels that left a clear gain: ResNet-18 (32x32 input) trained 1.13 times as fast with oneDNN 2.6
// and 1.15 with oneDNN 3.7 (medians of 5 rounds, a Zen 4 capped to AVX2), against its AVX-512 kernels none.
// So conv2d_op_for runs it only where oneDNN runs AVX2 kernels (conv2d.hpp: winograd_on_avx2_conv2d_op);
// bench/results/2026-12-01-zen4-avx2-winograd has the figures. Results differ from the direct convolution's by float
// rounding in another order (about 1e-6 relative on those layers).
//
// Images are NHWC (the transforms vectorise over the channels): the input is reordered to it if it comes in
// another layout, and the output and input gradient are NHWC, which later ops read as they are handed. The
// forward's transformed input V stays for the weights' gradient. The weights are read from the flat buffer in
// PyTorch's layout each forward (transformed, 16 x in x out floats) and the gradient written there directly.
// No bias and no fused activation: conv2d_op_for sends only convolutions without them here (a ResNet's, each
// followed by batch norm).
#pragma once

#include <algorithm>
#include <string>

#include "sinew/backend/generic/node_config.hpp"
#include "sinew/backend/onednn/common.hpp"
#include "sinew/backend/simd/winograd.hpp"
#include "sinew/core/parallel.hpp"
#include "sinew/metrics/profile.hpp"
#include "sinew/tensor/buffer.hpp"

namespace sinew::backend::onednn {

/// Whether a convolution runs as winograd_conv2d_op where oneDNN runs AVX2 kernels: a 3x3 kernel at stride 1 with
/// padding 1 (the output the input's size), without bias or a fused activation, onto an output of 4x4 to 8x8
/// pixels with at most 256 channels on each side. A larger image holds a product's rows in cache no longer, and with
/// 512 channels on 4x4 the weights' transforms (16 x in x out floats) outweigh the products' savings (0.88 times the
/// direct primitives' speed in a standalone step on AVX-512, 1.18 on AVX2, for 1.31-1.52 on 64 and 256 channels).
/// conv2d.hpp asks this after the small-image and thin tests.
constexpr bool conv_is_winograd(int kernel, int stride, int padding, bool bias, bool activation, int out_h,
                                int out_w, int in_c, int out_c) noexcept {
  const int pixels = out_h * out_w;
  return kernel == 3 && stride == 1 && padding == 1 && !bias && !activation && pixels >= 16 && pixels <= 64 &&
         in_c <= 256 && out_c <= 256;
}

class winograd_conv2d_op : public own_kernel_op_base {
 public:
  template <NodeType N>
  void setup(context& ctx, const desc& src_md, int batch, ParamSlots p, bool need_diff_src) {
    setup(ctx, src_md, conv2d_config<N>(batch), p, need_diff_src);
  }

  void setup(context& ctx, const desc& src_md, const Conv2dConfig& c, ParamSlots p, bool need_diff_src) {
    c.require_dense("winograd_conv2d_op", "conv2d_op_for sends the others to conv2d_op");
    if (c.kernel != 3 || c.stride != 1 || c.padding != 1 || c.out_h != c.in_h || c.out_w != c.in_w)
      throw backend_error("winograd_conv2d_op: a " + std::to_string(c.kernel) + "x" + std::to_string(c.kernel) +
                          " kernel at stride " + std::to_string(c.stride) + " with padding " +
                          std::to_string(c.padding) +
                          " given; it computes 3x3 kernels at stride 1 with padding 1 only (conv_is_winograd)");
    if (c.bias || c.act != simd::activation::none)
      throw backend_error("winograd_conv2d_op: a bias or a fused activation given; it computes neither "
                          "(conv_is_winograd sends such layers to conv2d_op)");
    c_ = c;
    user_ = p;
    need_diff_src_ = need_diff_src;
    tiles_ = {c.batch, c.out_h, c.out_w};
    const auto& eng = ctx.engine();
    const memory::dim t = memory::dim(tiles_.tiles()), in = c.in_c, out = c.out_c;
    const std::size_t wide = std::size_t(t) * std::size_t(std::max(c.in_c, c.out_c)) * 16;
    v_ = memory(desc({16, t, in}, dt::f32, tag::abc), eng);
    u_ = memory(desc({16, in, out}, dt::f32, tag::abc), eng);
    du_ = memory(desc({16, in, out}, dt::f32, tag::abc), eng);
    products_ = AlignedBuffer<float>(wide);
    // Forward: M[xi] = V[xi] U[xi], into products_.
    const desc m_out({16, t, out}, dt::f32, tag::abc);
    forward_ = make_matmul(ctx, "conv2d (winograd) forward", v_.get_desc(), u_.get_desc(), m_out);
    forward_args_ = {{DNNL_ARG_SRC, v_}, {DNNL_ARG_WEIGHTS, u_}, {DNNL_ARG_DST, memory(m_out, eng, products_.data())}};
    // Weights' gradient: dU[xi] = V[xi]^T dM[xi], V read transposed through its strides, dM in products_.
    const desc v_t({16, in, t}, dt::f32, dims{t * in, 1, in});
    weights_ = make_matmul(ctx, "conv2d (winograd) backward weights", v_t, m_out, du_.get_desc());
    weights_args_ = {{DNNL_ARG_SRC, memory(v_t, eng, v_.get_data_handle())},
                     {DNNL_ARG_WEIGHTS, memory(m_out, eng, products_.data())},
                     {DNNL_ARG_DST, du_}};
    if (need_diff_src) {
      // Backward data: the forward of the output gradient (transformed into products_) with the flipped kernel.
      ub_ = memory(desc({16, out, in}, dt::f32, tag::abc), eng);
      data_products_ = AlignedBuffer<float>(std::size_t(t) * std::size_t(in) * 16);
      const desc dm_in({16, t, out}, dt::f32, tag::abc), dx_out({16, t, in}, dt::f32, tag::abc);
      data_ = make_matmul(ctx, "conv2d (winograd) backward data", dm_in, ub_.get_desc(), dx_out);
      data_args_ = {{DNNL_ARG_SRC, memory(dm_in, eng, products_.data())},
                    {DNNL_ARG_WEIGHTS, ub_},
                    {DNNL_ARG_DST, memory(dx_out, eng, data_products_.data())}};
    }
    const desc image_in({c.batch, c.in_c, c.in_h, c.in_w}, dt::f32, tag::nhwc);
    src_.setup(ctx, src_md, image_in);
    dst_ = memory(desc({c.batch, c.out_c, c.out_h, c.out_w}, dt::f32, tag::nhwc), eng);
    diff_src_ = need_diff_src ? memory(image_in, eng) : memory();
  }

  void forward(context& ctx, const memory& src) { forward(ctx, src, metrics::no_probe); }
  void backward(context& ctx, const memory& src, const memory& diff_dst) {
    backward(ctx, src, diff_dst, metrics::no_probe);
  }

  template <class Probe>
  void forward(context& ctx, const memory& src, Probe& probe) {
    probe.begin(metrics::OpKind::convolution);
    const float* x = data(src_(ctx, src));
    if (weights_cache_.take())
      over(c_.in_c, [&](std::size_t i0, std::size_t i1) {
        simd::winograd::weights(user_.weights, c_.in_c, c_.out_c, data(u_), int(i0), int(i1));
      });
    over_tiles([&](std::size_t t0, std::size_t t1) { simd::winograd::input_tiles(tiles_, x, c_.in_c, data(v_), t0, t1); });
    run(ctx, forward_, forward_args_);
    ctx.stream().wait();
    over_tiles([&](std::size_t t0, std::size_t t1) {
      simd::winograd::output_tiles(tiles_, products_.data(), c_.out_c, data(dst_), t0, t1);
    });
  }

  /// `src` must be the tensor of the last forward() (whose transformed input the weights' gradient reads).
  template <class Probe>
  void backward(context& ctx, const memory&, const memory& diff_dst, Probe& probe) {
    const float* dy = data(diff_dst_(ctx, diff_dst));
    probe.begin(metrics::OpKind::convolution_backward_weights);
    over_tiles([&](std::size_t t0, std::size_t t1) {
      simd::winograd::output_gradient_tiles(tiles_, dy, c_.out_c, products_.data(), t0, t1);
    });
    run(ctx, weights_, weights_args_);
    ctx.stream().wait();
    over(c_.in_c, [&](std::size_t i0, std::size_t i1) {
      simd::winograd::weights_gradient(data(du_), c_.in_c, c_.out_c, user_.diff_weights, int(i0), int(i1));
    });
    if (!need_diff_src_) return;
    probe.begin(metrics::OpKind::convolution_backward_data);
    over(c_.out_c, [&](std::size_t o0, std::size_t o1) {
      simd::winograd::flipped_weights(user_.weights, c_.in_c, c_.out_c, data(ub_), int(o0), int(o1));
    });
    over_tiles([&](std::size_t t0, std::size_t t1) {
      simd::winograd::input_tiles(tiles_, dy, c_.out_c, products_.data(), t0, t1);
    });
    run(ctx, data_, data_args_);
    ctx.stream().wait();
    over_tiles([&](std::size_t t0, std::size_t t1) {
      simd::winograd::output_tiles(tiles_, data_products_.data(), c_.in_c, data(diff_src_), t0, t1);
    });
  }

 private:
  static float* data(const memory& m) { return static_cast<float*>(m.get_data_handle()); }

  static dnnl::matmul make_matmul(context& ctx, const char* what, const desc& a, const desc& b, const desc& out) {
    return dnnl::matmul(checked(what, [&] {
      return compat::forward<dnnl::matmul>(ctx.engine(), dnnl::primitive_attr(), a, b, out);
    }));
  }

  // f(begin, end) over [0, n) split between the threads: channels of the weights' transforms.
  template <class F>
  static void over(int n, F&& f) {
    parallel_ranges(std::size_t(n), std::forward<F>(f), 1, 8);
  }
  // The same over the batch's tiles.
  template <class F>
  void over_tiles(F&& f) const {
    parallel_ranges(tiles_.tiles(), std::forward<F>(f), 1, 16);
  }

  Conv2dConfig c_{};
  ParamSlots user_{};
  simd::winograd::tiling tiles_{};
  memory v_, u_, ub_, du_;                                  // V, U, the flipped U, dU: [16][rows][cols]
  AlignedBuffer<float> products_, data_products_;           // M or dM [16][tiles][out]; backward data's [.][in]
  dnnl::matmul forward_, weights_, data_;
  bound_args forward_args_, weights_args_, data_args_;
  converter src_;
};

}  // namespace sinew::backend::onednn
