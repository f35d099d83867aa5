// sinew/backend/eigen/activation.hpp: an activation that is not fused into the layer before it: sinew's
// SIMD kernels on chunks spread over the Eigen pool (layout-agnostic, so the tensor keeps its layout).
// Backward differentiates through the output.
#pragma once

#include "sinew/backend/eigen/common.hpp"

namespace sinew::backend::eigen {

class activation_op : public op_base<> {
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

  template <class = void>  // instantiated only if used: see common.hpp, "Compile time"
  void forward(context& ctx, const tensor& src) {
    activation_forward(ctx.dev(), kind_, src.data, dst_.data(), dst_.desc().size());
  }

  template <class = void>  // instantiated only if used: see common.hpp, "Compile time"
  void backward(context& ctx, const tensor&, const tensor& diff_dst) {
    if (!need_diff_src_) return;
    activation_backward(ctx.dev(), kind_, dst_.data(), diff_dst_(ctx, diff_dst).data, diff_src_.data(),
                        dst_.desc().size());
  }

 private:
  simd::activation kind_ = simd::activation::none;
};

}  // namespace sinew::backend::eigen

namespace sinew::backend {
template <>
struct op_for<layer_kind::activation, Eigen> {
  using type = eigen::activation_op;
};
}  // namespace sinew::backend
