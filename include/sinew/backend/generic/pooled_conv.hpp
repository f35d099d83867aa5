// sinew/backend/generic/pooled_conv.hpp: a PooledConv node (a Conv2d, its activation and a non-overlapping
// AvgPool; layers/detail/pooled_conv.hpp) as the backend's own convolution and pooling ops, one after the other.
//
// This is what every backend runs unless it maps layer_kind::pooled_conv itself: the same ops, in the same order,
// as the two layers lowered apart, so a backend that does not fuse them computes the same numbers at the same speed.
// OneDnn maps the thin convolutions' nodes to one op (backend/onednn/thin_conv2d.hpp).
#pragma once

#include "sinew/backend/generic/chain.hpp"
#include "sinew/backend/op_table.hpp"
#include "sinew/layers/detail/pooled_conv.hpp"

namespace sinew::backend::generic {

template <class B, NodeType N>
class pooled_conv_op {
  using tensor = typename B::tensor;
  using tensor_desc = typename B::tensor_desc;
  using parts = typename N::layer::template nodes<typename N::input, typename N::activation>;

 public:
  template <NodeType M>
  void setup(typename B::context& ctx, const tensor_desc& src_desc, int batch, ParamSlots slots, bool need_diff_src) {
    layers_.setup(ctx, src_desc, batch, slots, need_diff_src);
  }

  tensor_desc dst_desc() const { return layers_.dst_desc(); }
  const tensor& dst() const { return layers_.dst(); }
  tensor_desc diff_src_desc() const { return layers_.diff_src_desc(); }
  const tensor& diff_src() const { return layers_.diff_src(); }
  void bind_diff_dst(typename B::context& ctx, const tensor_desc& d) { layers_.bind_diff_dst(ctx, d); }
  void set_mode(ForwardMode mode) { layers_.set_mode(mode); }

  void forward(typename B::context& ctx, const tensor& src) { forward(ctx, src, metrics::no_probe); }
  void backward(typename B::context& ctx, const tensor& src, const tensor& diff_dst) {
    backward(ctx, src, diff_dst, metrics::no_probe);
  }
  /// Each op's time goes to its own kind, as for the layers lowered apart.
  template <class Probe>
  void forward(typename B::context& ctx, const tensor& src, Probe& probe) {
    layers_.forward(ctx, src, probe);
  }
  template <class Probe>
  void backward(typename B::context& ctx, const tensor& src, const tensor& diff_dst, Probe& probe) {
    layers_.backward(ctx, src, diff_dst, probe);
  }

 private:
  chain<B, type_list<typename parts::conv_node, typename parts::pool_node>> layers_;
};

}  // namespace sinew::backend::generic

namespace sinew::backend {
/// Every backend runs a PooledConv node as its convolution and pooling ops unless it maps the kind itself.
template <class B>
struct op_for<layer_kind::pooled_conv, B> {
  template <NodeType N>
  using type_for = generic::pooled_conv_op<B, N>;
};
}  // namespace sinew::backend
