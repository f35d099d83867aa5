// sinew/backend/generic/pooled_dense.hpp: a PooledDense node (layers/detail/pooled_dense.hpp) on any backend
// without an op of its own for it: the adaptive pool, Flatten and the Dense run as written, each on the backend's
// own op, so the results are the unfolded layers' exactly. OneDnn folds the Dense's matrix instead
// (backend/onednn/pooled_dense.hpp).
#pragma once

#include "sinew/backend/generic/chain.hpp"
#include "sinew/backend/op_table.hpp"
#include "sinew/layers/detail/pooled_dense.hpp"

namespace sinew::backend::generic {

template <class B, NodeType N>
class pooled_dense_op {
  using tensor = typename B::tensor;
  using tensor_desc = typename B::tensor_desc;

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
  /// Each layer's time in its own kind (pooling, flatten, fully_connected).
  template <class Probe>
  void forward(typename B::context& ctx, const tensor& src, Probe& probe) {
    layers_.forward(ctx, src, probe);
  }
  template <class Probe>
  void backward(typename B::context& ctx, const tensor& src, const tensor& diff_dst, Probe& probe) {
    layers_.backward(ctx, src, diff_dst, probe);
  }

 private:
  chain<B, typename N::applied::template nodes<typename N::activation>> layers_;
};

}  // namespace sinew::backend::generic

namespace sinew::backend {
/// Every backend runs a PooledDense node as its three layers unless it maps the kind itself (OneDnn does).
template <class B>
struct op_for<layer_kind::pooled_dense, B> {
  template <NodeType N>
  using type_for = generic::pooled_dense_op<B, N>;
};
}  // namespace sinew::backend
