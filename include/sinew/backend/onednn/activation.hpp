// sinew/backend/onednn/activation.hpp: an activation that is not fused into the layer before it, computed
// by sinew's SIMD kernels on the tensor's physical buffer in whatever layout it arrives (see
// backend/simd/activation.hpp for why not oneDNN's eltwise). Backward differentiates through the output.
#pragma once

#include "sinew/backend/onednn/common.hpp"

namespace sinew::backend::onednn {

class activation_op {
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

  desc dst_desc() const { return dst_.get_desc(); }
  const memory& dst() const noexcept { return dst_; }
  desc diff_src_desc() const { return diff_src_ ? diff_src_.get_desc() : desc(); }
  const memory& diff_src() const noexcept { return diff_src_; }
  void bind_diff_dst(context& ctx, const desc& d) {
    if (need_diff_src_) diff_dst_.setup(ctx, d, dst_.get_desc());
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
  bool need_diff_src_ = false;
  std::size_t floats_ = 0;
  memory dst_, diff_src_;
  converter diff_dst_;
};

}  // namespace sinew::backend::onednn

namespace sinew::backend {
template <>
struct op_for<layer_kind::activation, OneDnn> {
  using type = onednn::activation_op;
};
}  // namespace sinew::backend
