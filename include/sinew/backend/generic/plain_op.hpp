// sinew/backend/generic/plain_op.hpp: the op of every backend for a layer that computes itself on plain NCHW
// floats (a kind derived from layer_kind::plain, layers/layer_spec.hpp).
//
// The input and the output gradient are converted into plain NCHW floats with the backend's converter (nothing is
// copied where they are plain already); the layer's forward and backward write the output and the input gradient
// into plain buffers that the op owns, which the backend sees through its external. The next op converts them into
// the layout it wants, as at the boundary of a backend::Mix. The conversions count toward the op's time.
#pragma once

#include <cstddef>
#include <vector>

#include "sinew/backend/backend_spec.hpp"
#include "sinew/layers/layer_spec.hpp"

namespace sinew::backend::generic {

/// Node N of a plain layer kind on backend B. Fulfils the op contract of backend_spec.hpp.
template <class B, NodeType N>
class plain_op {
  using applied = typename N::applied;
  using in = typename N::input;
  using out = typename N::output;
  using tensor = typename B::tensor;
  using tensor_desc = typename B::tensor_desc;

  static std::size_t workspace_floats(int batch) {
    if constexpr (requires { applied::workspace(batch); })
      return applied::workspace(batch);
    else
      return 0;
  }

 public:
  /// Plans the input's conversion and binds the op's plain output and input gradient.
  template <NodeType>
  void setup(typename B::context& ctx, const tensor_desc& src_desc, int batch, ParamSlots slots, bool need_diff_src) {
    batch_ = batch;
    slots_ = slots;
    need_diff_src_ = need_diff_src;
    src_to_plain_.setup(ctx, src_desc, B::plain_like(src_desc));
    dst_data_.assign(std::size_t(batch) * out::kSize, 0.0f);
    dst_.setup(ctx, B::plain_desc(batch, out::kChannels, out::kHeight, out::kWidth));
    dst_tensor_ = &dst_.bind(dst_data_.data());
    // The gradient takes its input's dimensions (a flat input's may be 2-D), as Mix's boundary does.
    diff_src_data_.assign(need_diff_src ? std::size_t(batch) * in::kSize : 0, 0.0f);
    diff_src_.setup(ctx, B::plain_like(src_desc));
    diff_src_tensor_ = &diff_src_.bind(diff_src_data_.data());
    workspace_.assign(workspace_floats(batch), 0.0f);
  }

  /// The op contract (backend_spec.hpp): plain NCHW output and input gradient.
  /// @{
  tensor_desc dst_desc() const { return dst_.desc(); }
  const tensor& dst() const noexcept { return *dst_tensor_; }
  tensor_desc diff_src_desc() const { return diff_src_.desc(); }
  const tensor& diff_src() const noexcept { return *diff_src_tensor_; }
  void bind_diff_dst(typename B::context& ctx, const tensor_desc& d) {
    diff_dst_to_plain_.setup(ctx, d, B::plain_like(d));
  }
  void set_mode(ForwardMode mode) { training_ = mode.training; }
  /// @}

  /// The layer's forward on the plain input.
  void forward(typename B::context& ctx, const tensor& src) {
    src_ = B::data(src_to_plain_(ctx, src));
    applied::forward(pass(src_));
    dst_tensor_ = &dst_.bind(dst_data_.data());
  }

  /// The layer's backward; the input is the last forward's (converted then).
  void backward(typename B::context& ctx, const tensor&, const tensor& diff_dst) {
    PlainPass p = pass(src_);
    p.diff_dst = B::data(diff_dst_to_plain_(ctx, diff_dst));
    p.diff_src = need_diff_src_ ? diff_src_data_.data() : nullptr;
    p.diff_weights = slots_.diff_weights;
    p.diff_bias = slots_.diff_bias;
    applied::backward(p);
    diff_src_tensor_ = &diff_src_.bind(diff_src_data_.data());
  }

 private:
  PlainPass pass(const float* src) {
    PlainPass p;
    p.batch = batch_;
    p.training = training_;
    p.src = src;
    p.dst = dst_data_.data();
    p.weights = slots_.weights;
    p.bias = slots_.bias;
    p.buffers = slots_.buffers;
    p.workspace = workspace_;
    p.sum_over_workers = slots_.sum_over_workers;
    return p;
  }

  int batch_ = 0;
  bool training_ = true;
  bool need_diff_src_ = false;
  ParamSlots slots_{};
  typename B::converter src_to_plain_, diff_dst_to_plain_;
  typename B::external dst_, diff_src_;
  std::vector<float> dst_data_, diff_src_data_, workspace_;
  const float* src_ = nullptr;
  const tensor* dst_tensor_ = nullptr;
  const tensor* diff_src_tensor_ = nullptr;
};

}  // namespace sinew::backend::generic
