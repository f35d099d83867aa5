// sinew/backend/onednn/dense.hpp: Dense (+ fused activation) as a oneDNN inner product.
//
// The input may be 2-D (after Flatten) or 4-D (a C x 1 x 1 input, or any layout oneDNN accepts): the
// weights are then seen as [Out, C, H, W], which is the same memory as PyTorch's [Out, C*H*W].
#pragma once

#include "sinew/backend/onednn/common.hpp"

namespace sinew::backend::onednn {

class dense_op {
 public:
  template <NodeType N>
  void setup(context& ctx, const desc& src_md, int batch, ParamSlots p, bool need_diff_src) {
    using L = typename N::layer;
    setup(ctx, src_md, batch, L::kOutputs, L::kHasBias, activation_of<typename N::activation>(), p, need_diff_src);
  }

  void setup(context& ctx, const desc& src_md, int batch, int outputs, bool bias, simd::activation act, ParamSlots p,
             bool need_diff_src) {
    using namespace dnnl;
    const auto& eng = ctx.engine();
    need_diff_src_ = need_diff_src;
    has_bias_ = bias;
    const dims in = src_md.dims();
    dims w_dims = in;
    w_dims[0] = outputs;
    const tag user_w_tag = in.size() == 2 ? tag::oi : tag::oihw;
    const desc src_any(in, dt::f32, tag::any), w_any(w_dims, dt::f32, tag::any);
    const desc b_md({outputs}, dt::f32, tag::x), dst_any({batch, outputs}, dt::f32, tag::any);
    const desc no_bias;

    fwd_pd_ = checked("dense forward", [&] {
      return inner_product_forward::primitive_desc(
          {prop_kind::forward_training, src_any, w_any, bias ? b_md : no_bias, dst_any}, fused_activation::attr(act), eng);
    });
    fwd_ = inner_product_forward(fwd_pd_);
    src_.setup(ctx, src_md, fwd_pd_.src_desc());
    user_w_ = memory(desc(w_dims, dt::f32, user_w_tag), eng, p.weights);
    w_.setup(ctx, user_w_.get_desc(), fwd_pd_.weights_desc());
    if (bias) user_b_ = memory(b_md, eng, p.bias);
    dst_ = memory(fwd_pd_.dst_desc(), eng);
    act_.setup(ctx, act, fwd_pd_.dst_desc());

    auto bww_pd = checked("dense backward weights", [&] {
      return inner_product_backward_weights::primitive_desc({src_any, w_any, bias ? b_md : no_bias, dst_any}, eng,
                                                             fwd_pd_);
    });
    bww_ = inner_product_backward_weights(bww_pd);
    bww_src_.setup(ctx, fwd_pd_.src_desc(), bww_pd.src_desc());
    bww_diff_dst_.setup(ctx, fwd_pd_.dst_desc(), bww_pd.diff_dst_desc());
    diff_w_.setup(ctx, bww_pd.diff_weights_desc(), memory(user_w_.get_desc(), eng, p.diff_weights));
    if (bias) diff_b_.setup(ctx, bww_pd.diff_bias_desc(), memory(b_md, eng, p.diff_bias));

    if (need_diff_src) {
      auto bwd_pd = checked("dense backward data", [&] {
        return inner_product_backward_data::primitive_desc({src_any, w_any, dst_any}, eng, fwd_pd_);
      });
      bwd_ = inner_product_backward_data(bwd_pd);
      bwd_w_.setup(ctx, fwd_pd_.weights_desc(), bwd_pd.weights_desc());
      bwd_diff_dst_.setup(ctx, fwd_pd_.dst_desc(), bwd_pd.diff_dst_desc());
      diff_src_ = memory(bwd_pd.diff_src_desc(), eng);
    }
  }

  desc dst_desc() const { return fwd_pd_.dst_desc(); }
  const memory& dst() const noexcept { return dst_; }
  desc diff_src_desc() const { return diff_src_ ? diff_src_.get_desc() : desc(); }
  const memory& diff_src() const noexcept { return diff_src_; }
  void bind_diff_dst(context& ctx, const desc& d) { diff_dst_.setup(ctx, d, fwd_pd_.dst_desc()); }

  void forward(context& ctx, const memory& src) {
    if (&src != bound_src_) bind_src(src);
    src_.run(ctx, src);
    w_.run(ctx, user_w_);
    run(ctx, fwd_, fwd_args_);
    act_.forward(dst_);
  }

  /// `src` must be the tensor of the last forward().
  void backward(context& ctx, const memory& src, const memory& diff_dst) {
    if (&diff_dst != bound_diff_dst_) bind_diff_dst_tensor(diff_dst);
    diff_dst_.run(ctx, diff_dst);
    const memory& dd = diff_dst_.target_for(diff_dst);
    act_.backward(dst_, dd);
    const memory& dz = act_.target_for(dd);
    bww_src_.run(ctx, src_.target_for(src));
    bww_diff_dst_.run(ctx, dz);
    run(ctx, bww_, bww_args_);
    diff_w_.commit(ctx);
    if (has_bias_) diff_b_.commit(ctx);
    if (need_diff_src_) {
      bwd_diff_dst_.run(ctx, dz);
      bwd_w_.run(ctx, w_.target_for(user_w_));
      run(ctx, bwd_, bwd_args_);
    }
  }

 private:
  void bind_src(const memory& src) {
    bound_src_ = &src;
    const memory& s = src_.target_for(src);
    fwd_args_ = {{DNNL_ARG_SRC, s}, {DNNL_ARG_WEIGHTS, w_.target_for(user_w_)}, {DNNL_ARG_DST, dst_}};
    if (has_bias_) fwd_args_.emplace(DNNL_ARG_BIAS, user_b_);
    bww_args_.set(DNNL_ARG_SRC, bww_src_.target_for(s));
    bww_args_.set(DNNL_ARG_DIFF_WEIGHTS, diff_w_.output());
    if (has_bias_) bww_args_.set(DNNL_ARG_DIFF_BIAS, diff_b_.output());
  }
  void bind_diff_dst_tensor(const memory& diff_dst) {
    bound_diff_dst_ = &diff_dst;
    const memory& dz = act_.target_for(diff_dst_.target_for(diff_dst));
    bww_args_.set(DNNL_ARG_DIFF_DST, bww_diff_dst_.target_for(dz));
    if (need_diff_src_)
      bwd_args_ = {{DNNL_ARG_DIFF_DST, bwd_diff_dst_.target_for(dz)},
                   {DNNL_ARG_WEIGHTS, bwd_w_.target_for(w_.target_for(user_w_))},
                   {DNNL_ARG_DIFF_SRC, diff_src_}};
  }

  bool need_diff_src_ = false, has_bias_ = true;
  dnnl::inner_product_forward::primitive_desc fwd_pd_;
  dnnl::inner_product_forward fwd_;
  dnnl::inner_product_backward_weights bww_;
  dnnl::inner_product_backward_data bwd_;
  memory user_w_, user_b_, dst_, diff_src_;
  const memory* bound_src_ = nullptr;
  const memory* bound_diff_dst_ = nullptr;
  bound_args fwd_args_, bww_args_, bwd_args_;
  converter src_, w_, diff_dst_, bww_src_, bww_diff_dst_, bwd_w_, bwd_diff_dst_;
  writeback diff_w_, diff_b_;
  fused_activation act_;
};

}  // namespace sinew::backend::onednn
