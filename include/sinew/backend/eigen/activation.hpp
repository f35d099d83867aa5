// sinew/backend/eigen/activation.hpp: an activation that is not fused into the layer before it: sinew's
// SIMD kernels on chunks spread over the Eigen pool (layout-agnostic, so the tensor keeps its layout).
// Backward differentiates through the output.
#pragma once

#include "sinew/backend/eigen/common.hpp"

namespace sinew::backend::eigen {

class activation_op {
 public:
  template <NodeType N>
  void setup(context& ctx, const tensor_desc& src_desc, int, ParamSlots, bool need_diff_src) {
    setup(ctx, src_desc, activation_of<typename N::layer>(), need_diff_src);
  }

  void setup(context&, const tensor_desc& src_desc, simd::activation kind, bool need_diff_src) {
    kind_ = kind;
    need_diff_src_ = need_diff_src;
    dst_.allocate(src_desc);
    if (need_diff_src) diff_src_.allocate(src_desc);
  }

  tensor_desc dst_desc() const { return dst_.desc(); }
  const tensor& dst() const noexcept { return dst_.get(); }
  tensor_desc diff_src_desc() const { return diff_src_ ? diff_src_.desc() : tensor_desc{}; }
  const tensor& diff_src() const noexcept { return diff_src_.get(); }
  void bind_diff_dst(context& ctx, const tensor_desc& d) {
    if (need_diff_src_) diff_dst_.setup(ctx, d, dst_.desc());
  }

  void forward(context& ctx, const tensor& src) {
    activation_forward(ctx.dev(), kind_, src.data, dst_.data(), dst_.desc().size());
  }

  void backward(context& ctx, const tensor&, const tensor& diff_dst) {
    if (!need_diff_src_) return;
    activation_backward(ctx.dev(), kind_, dst_.data(), diff_dst_(ctx, diff_dst).data, diff_src_.data(),
                        dst_.desc().size());
  }

 private:
  simd::activation kind_ = simd::activation::none;
  bool need_diff_src_ = false;
  owned_tensor dst_, diff_src_;
  converter diff_dst_;
};

}  // namespace sinew::backend::eigen

namespace sinew::backend {
template <>
struct op_for<layer_kind::activation, Eigen> {
  using type = eigen::activation_op;
};
}  // namespace sinew::backend
