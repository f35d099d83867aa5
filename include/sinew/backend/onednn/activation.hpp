// sinew/backend/onednn/activation.hpp: an activation that is not fused into the layer before it, computed
// by sinew's SIMD kernels on the tensor's physical buffer in whatever layout it arrives (see
// backend/simd/activation.hpp for why not oneDNN's eltwise). Backward differentiates through the output.
// A ReLU or ReLU6 on a bf16 tensor (OneDnnBf16's, after a residual addition) runs as oneDNN's eltwise in bf16; the SIMD
// kernels read f32 only, so OneDnnBf16 gives other activations an f32 input (onednn_bf16.hpp).
#pragma once

#include "sinew/backend/onednn/common.hpp"

namespace sinew::backend::onednn {

class activation_op : public op_base {
 public:
  template <NodeType N>
  void setup(context& ctx, const desc& src_md, int, ParamSlots, bool need_diff_src) {
    setup(ctx, src_md, activation_of<typename N::layer>(), need_diff_src);
  }

  void setup(context& ctx, const desc& src_md, simd::activation kind, bool need_diff_src) {
    using namespace dnnl;
    kind_ = kind;
    need_diff_src_ = need_diff_src;
    floats_ = physical_floats(src_md);
    dst_ = memory(src_md, ctx.engine());
    if (need_diff_src) diff_src_ = memory(src_md, ctx.engine());
    eltwise_ = compat::data_type_of(src_md) != dt::f32;
    if (!eltwise_) return;
    if (kind != simd::activation::relu && kind != simd::activation::relu6)
      throw backend_error("onednn: an activation other than ReLU and ReLU6 reads f32 tensors only, and this one arrives "
                          "in another type (OneDnnBf16 converts such an input to f32 first: see onednn_bf16.hpp)");
    // ReLU6 is clip_v2 to [0, 6]: its backward reads the output, whose gradient is 0 at both kinks, as PyTorch's
    // (oneDNN 2.6 and 3.x alike).
    const bool six = kind == simd::activation::relu6;
    const auto alg = six ? algorithm::eltwise_clip_v2_use_dst_for_bwd : algorithm::eltwise_relu_use_dst_for_bwd;
    const float alpha = 0.0f, beta = six ? ReLU6::kCeiling : 0.0f;
    const auto fwd_pd = checked("relu forward", [&] {
      return compat::eltwise_forward(ctx.engine(), prop_kind::forward_training, alg, src_md, alpha, beta);
    });
    fwd_ = eltwise_forward(fwd_pd);
    if (need_diff_src)
      bwd_ = eltwise_backward(checked("relu backward", [&] {
        return compat::eltwise_backward(ctx.engine(), alg, src_md, src_md, fwd_pd, alpha, beta);
      }));
  }

  void forward(context& ctx, const memory& src) {
    if (eltwise_) {
      if (&src != bound_src_) {
        bound_src_ = &src;
        fwd_args_ = {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst_}};
      }
      run(ctx, fwd_, fwd_args_);
      return;
    }
    simd::activation_forward(kind_, static_cast<const float*>(src.get_data_handle()),
                             static_cast<float*>(dst_.get_data_handle()), floats_);
  }

  void backward(context& ctx, const memory&, const memory& diff_dst) {
    if (!need_diff_src_) return;
    const memory& dd = diff_dst_(ctx, diff_dst);
    if (eltwise_) {
      if (&dd != bound_diff_dst_) {
        bound_diff_dst_ = &dd;
        bwd_args_ = {{DNNL_ARG_DST, dst_}, {DNNL_ARG_DIFF_DST, dd}, {DNNL_ARG_DIFF_SRC, diff_src_}};
      }
      run(ctx, bwd_, bwd_args_);
      return;
    }
    simd::activation_backward(kind_, static_cast<const float*>(dst_.get_data_handle()),
                              static_cast<const float*>(dd.get_data_handle()),
                              static_cast<float*>(diff_src_.get_data_handle()), floats_);
  }

 private:
  simd::activation kind_ = simd::activation::none;
  std::size_t floats_ = 0;
  bool eltwise_ = false;  // a bf16 ReLU or ReLU6 on oneDNN's eltwise
  dnnl::eltwise_forward fwd_;
  dnnl::eltwise_backward bwd_;
  const memory* bound_src_ = nullptr;
  const memory* bound_diff_dst_ = nullptr;
  bound_args fwd_args_, bwd_args_;
};

}  // namespace sinew::backend::onednn

namespace sinew::backend {
template <>
struct op_for<layer_kind::activation, OneDnn> {
  using type = onednn::activation_op;
};
}  // namespace sinew::backend
