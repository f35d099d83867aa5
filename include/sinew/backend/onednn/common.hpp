// sinew/backend/onednn/common.hpp: the OneDnn backend's context, tensors and layout conversion.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

#include "sinew/backend/backend_spec.hpp"
#include "sinew/core/error.hpp"

namespace sinew::backend::onednn {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;
using dims = dnnl::memory::dims;
using memory = dnnl::memory;
using desc = dnnl::memory::desc;
/// Arguments of a primitive; built once per binding of input tensors and reused every step.
using args = std::unordered_map<int, memory>;

/// Engine, stream and thread count of one model. oneDNN (as Debian builds it) runs on OpenMP.
class context {
 public:
  explicit context(BackendOptions options = {}) : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    if (options.threads > 0) omp_set_num_threads(options.threads);
    threads_ = omp_get_max_threads();
  }
  context(const context&) = delete;
  context& operator=(const context&) = delete;

  const dnnl::engine& engine() const noexcept { return engine_; }
  dnnl::stream& stream() noexcept { return stream_; }
  int threads() const noexcept { return threads_; }

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  int threads_ = 1;
};

/// Plain NCHW f32 descriptor.
inline desc plain_desc(int batch, int c, int h, int w) { return desc({batch, c, h, w}, dt::f32, tag::nchw); }

/// The plain (row-major) layout of the same dimensions: nc for 2-D, nchw for 4-D.
inline desc plain_like(const desc& d) {
  const auto shape = d.dims();
  return desc(shape, dt::f32, shape.size() == 2 ? tag::nc : tag::nchw);
}

/// Calls a oneDNN constructor and turns its failure into a backend_error naming the layer and the cause.
template <class F>
auto checked(const char* what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const dnnl::error& e) {
    throw backend_error(std::string("onednn: cannot create ") + what + ": " + e.what());
  }
}

/// Caller-owned plain NCHW floats seen as a oneDNN memory; rebinding costs nothing.
class external {
 public:
  void setup(context& ctx, const onednn::desc& plain) {
    desc_ = plain;
    memory_ = memory(desc_, ctx.engine(), DNNL_MEMORY_NONE);
  }
  const memory& bind(const float* data) {
    memory_.set_data_handle(const_cast<float*>(data));
    return memory_;
  }
  const onednn::desc& desc() const noexcept { return desc_; }

 private:
  onednn::desc desc_;
  memory memory_;
};

/// A reorder created once for a fixed pair of layouts; passes the tensor through when they agree.
class converter {
 public:
  void setup(context& ctx, const desc& from, const desc& to) {
    needed_ = !(from == to);
    if (!needed_) return;
    target_ = memory(to, ctx.engine());
    reorder_ = checked("reorder", [&] { return dnnl::reorder(dnnl::reorder::primitive_desc(ctx.engine(), from, ctx.engine(), to)); });
  }
  /// The memory the converted tensor will be in (src itself when no reorder is needed).
  const memory& target_for(const memory& src) const noexcept { return needed_ ? target_ : src; }
  /// Executes the reorder, if any.
  void run(context& ctx, const memory& src) {
    if (needed_) reorder_.execute(ctx.stream(), const_cast<memory&>(src), target_);
  }
  const memory& operator()(context& ctx, const memory& src) {
    run(ctx, src);
    return target_for(src);
  }
  bool needed() const noexcept { return needed_; }

 private:
  bool needed_ = false;
  memory target_;
  dnnl::reorder reorder_;
};

/// A primitive's output that must land in caller-owned memory of a fixed layout (the flat gradient buffer):
/// the primitive writes there directly when the layouts agree, else into a staging buffer that commit() reorders.
class writeback {
 public:
  void setup(context& ctx, const desc& produced, const memory& target) {
    target_ = target;
    direct_ = produced == target.get_desc();
    if (direct_) return;
    staging_ = memory(produced, ctx.engine());
    reorder_ = checked("reorder", [&] { return dnnl::reorder(dnnl::reorder::primitive_desc(ctx.engine(), produced, ctx.engine(), target.get_desc())); });
  }
  /// Where the producing primitive writes.
  const memory& output() const noexcept { return direct_ ? target_ : staging_; }
  void commit(context& ctx) {
    if (!direct_) reorder_.execute(ctx.stream(), staging_, target_);
  }

 private:
  bool direct_ = true;
  memory target_, staging_;
  dnnl::reorder reorder_;
};

/// Copies a tensor of any layout into plain NCHW floats.
inline void to_plain(context& ctx, const memory& t, float* out) {
  memory dst(plain_like(t.get_desc()), ctx.engine(), out);
  dnnl::reorder(const_cast<memory&>(t), dst).execute(ctx.stream(), const_cast<memory&>(t), dst);
  ctx.stream().wait();
}

/// The element-wise algorithms of sinew's activations: forward, and backward computed from the output.
struct eltwise_algs {
  dnnl::algorithm forward = dnnl::algorithm::undef;
  dnnl::algorithm backward = dnnl::algorithm::undef;
};
template <class Act>
constexpr eltwise_algs eltwise_for() {
  if constexpr (std::is_same_v<Act, ReLU>)
    return {dnnl::algorithm::eltwise_relu, dnnl::algorithm::eltwise_relu_use_dst_for_bwd};
  else if constexpr (std::is_same_v<Act, Tanh>)
    return {dnnl::algorithm::eltwise_tanh, dnnl::algorithm::eltwise_tanh_use_dst_for_bwd};
  else if constexpr (std::is_same_v<Act, Sigmoid>)
    return {dnnl::algorithm::eltwise_logistic, dnnl::algorithm::eltwise_logistic_use_dst_for_bwd};
  else
    return {};
}

/// Backward of an activation fused into the layer before it: diff of the pre-activation from the
/// activation's output y and the gradient arriving for y.
class fused_activation_backward {
 public:
  bool active() const noexcept { return alg_.forward != dnnl::algorithm::undef; }
  void setup(context& ctx, eltwise_algs alg, const desc& dst_md) {
    alg_ = alg;
    if (!active()) return;
    auto fwd = checked("fused activation", [&] {
      return dnnl::eltwise_forward::primitive_desc(
          {dnnl::prop_kind::forward_training, alg.backward, dst_md, 0.f, 0.f}, ctx.engine());
    });
    auto pd = checked("fused activation backward", [&] {
      return dnnl::eltwise_backward::primitive_desc({alg.backward, dst_md, dst_md, 0.f, 0.f}, ctx.engine(), fwd);
    });
    prim_ = dnnl::eltwise_backward(pd);
    diff_ = memory(pd.diff_src_desc(), ctx.engine());
  }
  /// Where the gradient of the pre-activation will be (diff_dst itself when there is no activation).
  const memory& target_for(const memory& diff_dst) const noexcept { return active() ? diff_ : diff_dst; }
  /// Computes it; the argument map is built once per pair of input tensors, not per step.
  void run(context& ctx, const memory& dst, const memory& diff_dst) {
    if (!active()) return;
    if (&dst != bound_dst_ || &diff_dst != bound_diff_dst_) {
      bound_dst_ = &dst;
      bound_diff_dst_ = &diff_dst;
      args_ = {{DNNL_ARG_DST, dst}, {DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_SRC, diff_}};
    }
    prim_.execute(ctx.stream(), args_);
  }

 private:
  eltwise_algs alg_;
  dnnl::eltwise_backward prim_;
  memory diff_;
  const memory* bound_dst_ = nullptr;
  const memory* bound_diff_dst_ = nullptr;
  args args_;
};

inline dnnl::primitive_attr fused_attr(eltwise_algs alg) {
  dnnl::primitive_attr attr;
  if (alg.forward != dnnl::algorithm::undef) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, alg.forward, 0.f, 0.f);
    attr.set_post_ops(ops);
  }
  return attr;
}

}  // namespace sinew::backend::onednn
