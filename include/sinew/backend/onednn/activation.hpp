// sinew/backend/onednn/activation.hpp: an activation that is not fused into the layer before it, computed
// by sinew's SIMD kernels on the tensor's physical buffer in whatever layout it arrives (see
// backend/simd/activation.hpp for why not oneDNN's eltwise). Backward differentiates through the output.
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
    kind_ = kind;
    need_diff_src_ = need_diff_src;
    floats_ = physical_floats(src_md);
    dst_ = memory(src_md, ctx.engine());
    if (need_diff_src) diff_src_ = memory(src_md, ctx.engine());
  }

  void forward(context&, const memory& src) {
    simd::activation_forward(kind_, static_cast<const float*>(src.get_data_handle()),
                             static_cast<float*>(dst_.get_data_handle()), floats_);
  }

  void backward(context& ctx, const memory&, const memory& diff_dst) {
    if (!need_diff_src_) return;
    const memory& dd = diff_dst_(ctx, diff_dst);
    simd::activation_backward(kind_, static_cast<const float*>(dst_.get_data_handle()),
                              static_cast<const float*>(dd.get_data_handle()),
                              static_cast<float*>(diff_src_.get_data_handle()), floats_);
  }

 private:
  simd::activation kind_ = simd::activation::none;
  std::size_t floats_ = 0;
};

}  // namespace sinew::backend::onednn

namespace sinew::backend {
template <>
struct op_for<layer_kind::activation, OneDnn> {
  using type = onednn::activation_op;
};
}  // namespace sinew::backend
