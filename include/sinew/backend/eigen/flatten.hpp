// sinew/backend/eigen/flatten.hpp: C x H x W -> C*H*W in PyTorch's (C, H, W) order. An NHWC input is
// shuffled to NCHW first (TensorFlow flattens in (H, W, C) order, which would scramble PyTorch-layout Dense
// weights); a plain input is passed as a view. The input gradient is a view of the output gradient, in plain
// layout: the op before converts it if it works in NHWC.
#pragma once

#include "sinew/backend/eigen/common.hpp"

namespace sinew::backend::eigen {

class flatten_op {
 public:
  template <NodeType N>
  void setup(context& ctx, const tensor_desc& src_desc, int batch, ParamSlots, bool need_diff_src) {
    setup(ctx, src_desc, batch, need_diff_src);
  }

  void setup(context& ctx, const tensor_desc& src_desc, int batch, bool) {
    plain_ = plain_like(src_desc);
    to_plain_.setup(ctx, src_desc, plain_);
    dst_.desc = plain_desc(batch, src_desc.c * src_desc.h * src_desc.w, 1, 1);
    diff_src_.desc = plain_;
  }

  tensor_desc dst_desc() const { return dst_.desc; }
  const tensor& dst() const noexcept { return dst_; }
  tensor_desc diff_src_desc() const { return plain_; }
  const tensor& diff_src() const noexcept { return diff_src_; }
  void bind_diff_dst(context& ctx, const tensor_desc& d) { diff_dst_.setup(ctx, d, dst_.desc); }

  void forward(context& ctx, const tensor& src) { dst_.data = to_plain_(ctx, src).data; }
  void backward(context& ctx, const tensor&, const tensor& diff_dst) { diff_src_.data = diff_dst_(ctx, diff_dst).data; }

 private:
  tensor_desc plain_;
  converter to_plain_, diff_dst_;
  tensor dst_, diff_src_;
};

}  // namespace sinew::backend::eigen

namespace sinew::backend {
template <>
struct op_for<layer_kind::flatten, Eigen> {
  using type = eigen::flatten_op;
};
}  // namespace sinew::backend
