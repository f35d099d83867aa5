// sinew/backend/eigen/flatten.hpp: C x H x W -> C*H*W in PyTorch's (C, H, W) order. An NHWC input is
// shuffled to NCHW first (TensorFlow flattens in (H, W, C) order, which would scramble PyTorch-layout Dense
// weights); a plain input is passed as a view. The input gradient is a view of the output gradient, in plain
// layout: the op before converts it if it works in NHWC.
#pragma once

#include "sinew/backend/eigen/common.hpp"

namespace sinew::backend::eigen {

class flatten_op : public op_base<diff_dst_use::always> {
 public:
  template <NodeType N>
  void setup(context& ctx, const tensor_desc& src_desc, int batch, ParamSlots, bool need_diff_src) {
    setup(ctx, src_desc, batch, need_diff_src);
  }

  void setup(context& ctx, const tensor_desc& src_desc, int batch, bool) {
    need_diff_src_ = true;  // a view: its input gradient costs nothing
    const tensor_desc plain = plain_like(src_desc);
    to_plain_.setup(ctx, src_desc, plain);
    dst_.describe(plain_desc(batch, src_desc.c * src_desc.h * src_desc.w, 1, 1));
    diff_src_.describe(plain);
  }

  template <class = void>  // instantiated only if used: see common.hpp, "Compile time"
  void forward(context& ctx, const tensor& src) { dst_.point_to(to_plain_(ctx, src).data); }
  template <class = void>  // instantiated only if used: see common.hpp, "Compile time"
  void backward(context& ctx, const tensor&, const tensor& diff_dst) { diff_src_.point_to(diff_dst_(ctx, diff_dst).data); }

 private:
  converter to_plain_;
};

}  // namespace sinew::backend::eigen

namespace sinew::backend {
template <>
struct op_for<layer_kind::flatten, Eigen> {
  using type = eigen::flatten_op;
};
}  // namespace sinew::backend
