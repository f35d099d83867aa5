// sinew/backend/onednn/activation.hpp: an activation that is not fused into the layer before it.
// The backward pass differentiates through the output (the *_use_dst_for_bwd algorithms).
#pragma once

#include "sinew/backend/onednn/common.hpp"

namespace sinew::backend::onednn {

class activation_op {
 public:
  template <NodeType N>
  void setup(context& ctx, const desc& src_md, int, ParamSlots, bool need_diff_src) {
    setup(ctx, src_md, eltwise_for<typename N::layer>(), need_diff_src);
  }

  void setup(context& ctx, const desc& src_md, eltwise_algs alg, bool need_diff_src) {
    using namespace dnnl;
    const auto& eng = ctx.engine();
    need_diff_src_ = need_diff_src;
    auto fwd_pd = checked("activation forward", [&] {
      return eltwise_forward::primitive_desc({prop_kind::forward_training, alg.backward, src_md, 0.f, 0.f}, eng);
    });
    fwd_ = eltwise_forward(fwd_pd);
    dst_ = memory(fwd_pd.dst_desc(), eng);
    if (need_diff_src) {
      auto bwd_pd = checked("activation backward", [&] {
        return eltwise_backward::primitive_desc({alg.backward, fwd_pd.dst_desc(), fwd_pd.dst_desc(), 0.f, 0.f}, eng,
                                                fwd_pd);
      });
      bwd_ = eltwise_backward(bwd_pd);
      diff_src_ = memory(bwd_pd.diff_src_desc(), eng);
      bwd_diff_dst_desc_ = bwd_pd.diff_dst_desc();
    }
  }

  desc dst_desc() const { return dst_.get_desc(); }
  const memory& dst() const noexcept { return dst_; }
  desc diff_src_desc() const { return diff_src_ ? diff_src_.get_desc() : desc(); }
  const memory& diff_src() const noexcept { return diff_src_; }
  void bind_diff_dst(context& ctx, const desc& d) {
    if (need_diff_src_) diff_dst_.setup(ctx, d, bwd_diff_dst_desc_);
  }

  void forward(context& ctx, const memory& src) {
    if (&src != bound_src_) {
      bound_src_ = &src;
      fwd_args_ = {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst_}};
    }
    fwd_.execute(ctx.stream(), fwd_args_);
  }

  void backward(context& ctx, const memory&, const memory& diff_dst) {
    if (!need_diff_src_) return;
    if (&diff_dst != bound_diff_dst_) {
      bound_diff_dst_ = &diff_dst;
      bwd_args_ = {{DNNL_ARG_DST, dst_}, {DNNL_ARG_DIFF_DST, diff_dst_.target_for(diff_dst)},
                   {DNNL_ARG_DIFF_SRC, diff_src_}};
    }
    diff_dst_.run(ctx, diff_dst);
    bwd_.execute(ctx.stream(), bwd_args_);
  }

 private:
  bool need_diff_src_ = false;
  dnnl::eltwise_forward fwd_;
  dnnl::eltwise_backward bwd_;
  desc bwd_diff_dst_desc_;
  memory dst_, diff_src_;
  converter diff_dst_;
  const memory* bound_src_ = nullptr;
  const memory* bound_diff_dst_ = nullptr;
  args fwd_args_, bwd_args_;
};

}  // namespace sinew::backend::onednn
