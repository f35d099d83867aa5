// sinew/backend/generic/residual.hpp: Residual<Main, Shortcut> on any backend that provides B::adder
// (dst = a + b for two tensors whose layouts may differ; the result takes a's layout).
//
// Forward runs both branches on the block's input and adds their outputs. Backward sends the output
// gradient into both branches (the derivative of a sum) and adds the two input gradients.
#pragma once

#include "sinew/backend/generic/chain.hpp"
#include "sinew/backend/op_table.hpp"
#include "sinew/layers/residual.hpp"

namespace sinew::backend::generic {

template <class B, NodeType N>
class residual_op {
  using applied = typename N::applied;
  using tensor = typename B::tensor;
  using tensor_desc = typename B::tensor_desc;

 public:
  template <NodeType M>
  void setup(typename B::context& ctx, const tensor_desc& src_desc, int batch, ParamSlots slots, bool need_diff_src) {
    need_diff_src_ = need_diff_src;
    main_.setup(ctx, src_desc, batch, slots, need_diff_src);
    shortcut_.setup(ctx, src_desc, batch, slots, need_diff_src);
    sum_.setup(ctx, main_.dst_desc(), shortcut_.dst_desc());
  }

  tensor_desc dst_desc() const { return sum_.dst_desc(); }
  const tensor& dst() const { return sum_.dst(); }
  tensor_desc diff_src_desc() const { return diff_sum_.dst_desc(); }
  const tensor& diff_src() const { return diff_sum_.dst(); }

  void bind_diff_dst(typename B::context& ctx, const tensor_desc& d) {
    main_.bind_diff_dst(ctx, d);
    shortcut_.bind_diff_dst(ctx, d);
    if (need_diff_src_) diff_sum_.setup(ctx, main_.diff_src_desc(), shortcut_.diff_src_desc());
  }

  void set_mode(ForwardMode mode) {
    main_.set_mode(mode);
    shortcut_.set_mode(ForwardMode{mode.training, mix64(mode.seed ^ 0x5bd1e995u), mode.weights_unchanged});
  }

  void forward(typename B::context& ctx, const tensor& src) { forward(ctx, src, metrics::no_probe); }
  void backward(typename B::context& ctx, const tensor& src, const tensor& diff_dst) {
    backward(ctx, src, diff_dst, metrics::no_probe);
  }

  /// Each op of both branches in its own kind, then the sum as "add" (see metrics/profile.hpp).
  template <class Probe>
  void forward(typename B::context& ctx, const tensor& src, Probe& probe) {
    main_.forward(ctx, src, probe);
    shortcut_.forward(ctx, src, probe);
    probe.begin(metrics::OpKind::add);
    sum_.run(ctx, main_.dst(), shortcut_.dst());
  }

  template <class Probe>
  void backward(typename B::context& ctx, const tensor& src, const tensor& diff_dst, Probe& probe) {
    main_.backward(ctx, src, diff_dst, probe);
    shortcut_.backward(ctx, src, diff_dst, probe);
    if (!need_diff_src_) return;
    probe.begin(metrics::OpKind::add_backward);
    diff_sum_.run(ctx, main_.diff_src(), shortcut_.diff_src());
  }

 private:
  chain<B, typename applied::template main_nodes<B::kFuseActivations>> main_;
  chain<B, typename applied::template shortcut_nodes<B::kFuseActivations>> shortcut_;
  typename B::adder sum_, diff_sum_;
  bool need_diff_src_ = false;
};

}  // namespace sinew::backend::generic

namespace sinew::backend {
/// Residual blocks run on every backend, with that backend's own ops and adder.
template <class B>
struct op_for<layer_kind::residual, B> {
  template <NodeType N>
  using type_for = generic::residual_op<B, N>;
};
}  // namespace sinew::backend
