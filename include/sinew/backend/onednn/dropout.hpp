// sinew/backend/onednn/dropout.hpp: Dropout, on sinew's SIMD kernel (backend/simd/dropout.hpp), on plain
// NCHW (or flat) data, so that the mask of an element depends on its position in the tensor and not on the
// layout oneDNN chose for the layer before (a blocked nChw8c or nChw16c, which differs between instruction
// sets): runs are reproducible across machines, and the Eigen backend draws the same mask. A blocked input
// is reordered to plain first (the zoo's Dropouts follow Dense or Flatten, whose outputs are plain already).
// On plain input, in evaluation mode, the output is a view of the input: nothing is copied.
#pragma once

#include "sinew/backend/onednn/common.hpp"
#include "sinew/backend/simd/dropout.hpp"

namespace sinew::backend::onednn {

class dropout_op : public op_base {
 public:
  template <NodeType N>
  void setup(context& ctx, const desc& src_md, int, ParamSlots, bool need_diff_src) {
    setup(ctx, src_md, N::layer::kP, need_diff_src);
  }

  void setup(context& ctx, const desc& src_md, float p, bool need_diff_src) {
    p_ = p;
    need_diff_src_ = need_diff_src;
    const desc plain = plain_like(src_md);
    to_plain_.setup(ctx, src_md, plain);
    floats_ = physical_floats(plain);
    own_dst_ = memory(plain, ctx.engine());
    dst_ = memory(plain, ctx.engine(), DNNL_MEMORY_NONE);
    if (need_diff_src) {
      own_diff_src_ = memory(plain, ctx.engine());
      diff_src_ = memory(plain, ctx.engine(), DNNL_MEMORY_NONE);
    }
  }

  void set_mode(const ForwardMode& mode) noexcept { mode_ = mode; }

  void forward(context& ctx, const memory& src) {
    last_ = mode_;
    const memory& x = to_plain_(ctx, src);
    if (!last_.training) {
      dst_.set_data_handle(x.get_data_handle());
      return;
    }
    dst_.set_data_handle(own_dst_.get_data_handle());
    simd::dropout_forward(static_cast<const float*>(x.get_data_handle()),
                          static_cast<float*>(own_dst_.get_data_handle()), floats_, p_, last_.seed);
  }

  void backward(context& ctx, const memory&, const memory& diff_dst) {
    if (!need_diff_src_) return;
    const memory& dd = diff_dst_(ctx, diff_dst);
    if (!last_.training) {
      diff_src_.set_data_handle(dd.get_data_handle());
      return;
    }
    diff_src_.set_data_handle(own_diff_src_.get_data_handle());
    simd::dropout_backward(static_cast<const float*>(dd.get_data_handle()),
                           static_cast<float*>(own_diff_src_.get_data_handle()), floats_, p_, last_.seed);
  }

 private:
  float p_ = 0.5f;
  std::size_t floats_ = 0;
  ForwardMode mode_, last_;  ///< the mode of the next forward, and of the last one (which backward inverts)
  memory own_dst_, own_diff_src_;
  converter to_plain_;
};

}  // namespace sinew::backend::onednn

namespace sinew::backend {
template <>
struct op_for<layer_kind::dropout, OneDnn> {
  using type = onednn::dropout_op;
};
}  // namespace sinew::backend
