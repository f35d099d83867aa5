// sinew/backend/onednn/conv2d.hpp: Conv2d (+ fused activation) on oneDNN primitives.
//
// As oneDNN's cnn_training_f32 example: every descriptor is format_tag::any so each primitive picks its
// layout; reorders exist only where two layouts differ (input, PyTorch-layout weights, gradients) and are
// created at set-up (weighted_layer.hpp); the forward primitive descriptor is the hint of both backward ones.
#pragma once

#include "sinew/backend/onednn/weighted_layer.hpp"

namespace sinew::backend::onednn {

class conv2d_op : public weighted_layer<dnnl::convolution_forward, dnnl::convolution_backward_data,
                                        dnnl::convolution_backward_weights> {
 public:
  using config = Conv2dConfig;

  template <NodeType N>
  void setup(context& ctx, const desc& src_md, int batch, ParamSlots p, bool need_diff_src) {
    setup(ctx, src_md, conv2d_config<N>(batch), p, need_diff_src);
  }

  void setup(context& ctx, const desc& src_md, const config& c, ParamSlots p, bool need_diff_src) {
    using namespace dnnl;
    const auto& eng = ctx.engine();
    const dims src_dims{c.batch, c.in_c, c.in_h, c.in_w}, dst_dims{c.batch, c.out_c, c.out_h, c.out_w};
    const dims w_dims{c.out_c, c.in_c, c.kernel, c.kernel}, strides{c.stride, c.stride}, pad{c.padding, c.padding};
    const desc src_any(src_dims, dt::f32, tag::any), dst_any(dst_dims, dt::f32, tag::any);
    const desc w_any(w_dims, dt::f32, tag::any);
    const desc bias = c.bias ? desc({c.out_c}, dt::f32, tag::x) : desc();
    const auto alg = algorithm::convolution_direct;

    const auto fwd = checked("conv2d forward", [&] {
      return forward_pd({prop_kind::forward_training, alg, src_any, w_any, bias, dst_any, strides, pad, pad},
                        fused_activation::attr(c.act), eng);
    });
    const auto bww = checked("conv2d backward weights", [&] {
      return backward_weights_pd({alg, src_any, w_any, bias, dst_any, strides, pad, pad}, eng, fwd);
    });
    std::optional<backward_data_pd> bwd;
    if (need_diff_src)
      bwd = checked("conv2d backward data", [&] {
        return backward_data_pd({alg, src_any, w_any, dst_any, strides, pad, pad}, eng, fwd);
      });
    finish_setup(ctx, src_md, fwd, bww, bwd, desc(w_dims, dt::f32, tag::oihw), bias, c.act, p);
  }
};

}  // namespace sinew::backend::onednn
