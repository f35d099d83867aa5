// sinew/backend/onednn/flatten.hpp: C x H x W -> C*H*W. A view when the input is already plain NCHW;
// otherwise one reorder into NCHW (PyTorch's order) first.
#pragma once

#include "sinew/backend/onednn/common.hpp"

namespace sinew::backend::onednn {

class flatten_op {
 public:
  template <NodeType N>
  void setup(context& ctx, const desc& src_md, int batch, ParamSlots, bool need_diff_src) {
    setup(ctx, src_md, batch, need_diff_src);
  }

  void setup(context& ctx, const desc& src_md, int batch, bool need_diff_src) {
    const dims in = compat::dims_of(src_md);
    dnnl::memory::dim features = 1;
    for (std::size_t i = 1; i < in.size(); ++i) features *= in[i];
    need_diff_src_ = need_diff_src;
    plain_ = plain_like(src_md);
    to_plain_.setup(ctx, src_md, plain_);
    dst_ = memory(desc({batch, features}, dt::f32, tag::nc), ctx.engine(), DNNL_MEMORY_NONE);
    diff_src_ = memory(plain_, ctx.engine(), DNNL_MEMORY_NONE);
  }

  desc dst_desc() const { return dst_.get_desc(); }
  const memory& dst() const noexcept { return dst_; }
  desc diff_src_desc() const { return plain_; }
  const memory& diff_src() const noexcept { return diff_src_; }
  void bind_diff_dst(context& ctx, const desc& d) { diff_dst_.setup(ctx, d, dst_.get_desc()); }

  void forward(context& ctx, const memory& src) {
    dst_.set_data_handle(to_plain_(ctx, src).get_data_handle());
  }
  void backward(context& ctx, const memory&, const memory& diff_dst) {
    if (need_diff_src_) diff_src_.set_data_handle(diff_dst_(ctx, diff_dst).get_data_handle());
  }

 private:
  bool need_diff_src_ = false;
  desc plain_;
  converter to_plain_, diff_dst_;
  memory dst_, diff_src_;
};

}  // namespace sinew::backend::onednn

namespace sinew::backend {
template <>
struct op_for<layer_kind::flatten, OneDnn> {
  using type = onednn::flatten_op;
};
}  // namespace sinew::backend
