// sinew/backend/onednn/batch_norm.hpp: BatchNorm2d (+ fused activation) on oneDNN's batch normalisation.
//
// Two primitive pairs are created at set-up, one per mode: training (batch statistics, computed into this
// op's mean and variance) and evaluation (use_global_stats: the running statistics in the Model's buffer
// array). Both forwards use prop_kind::forward_training, so an evaluation-mode forward can be differentiated
// too (a fused ReLU needs its workspace). Scale and shift are read from, and their gradients written to, the
// flat buffers directly: [weight | bias] is already two plain [C] arrays. The data keeps the layout the
// previous layer produced. A ReLU after it runs as oneDNN's fuse_norm_relu; Tanh and Sigmoid as sinew's SIMD
// kernels in place (see fused_activation).
//
// oneDNN's batch normalisation has jit kernels for NHWC and 8- or 16-channel blocked data, a plain C++ loop for NCHW
// (ncsp_bnorm) and its reference loop for other layouts: ResNeXt's grouped convolutions, 4 channels a group, write
// blocks of 4 (aBcd4b), and its 128-channel batch norms on 8x8 images took 82 of a 196 ms step that way (oneDNN 2.6
// and 3.7). The NCHW loop is slow too: on ResNet-18's 256-channel 2x2 images (small_conv2d writes NCHW there) it
// took 0.14 ms forward and 0.19 backward against the jit kernel's 0.03 on NHWC (oneDNN 2.6, Zen 5), and 1.90 and
// 1.05 ms under oneDNN 3.7.2 on a guest that reports no cache sizes, 9 ms of a 47 ms step. Where the input's layout
// has no jit kernel, the op converts it into the first that has one and normalises there; its output and input
// gradient stay in that layout (the layers around convert as they need).
//
// oneDNN's variance is the biased one (divided by n = N H W); the running variance is PyTorch's unbiased
// estimate, so the update scales it by n / (n - 1).
#pragma once

#include "sinew/backend/generic/probe.hpp"
#include "sinew/backend/onednn/common.hpp"

namespace sinew::backend::onednn {

class batch_norm_op {
 public:
  using config = BatchNormConfig;

  template <NodeType N>
  void setup(context& ctx, const desc& src_md, int batch, ParamSlots p, bool need_diff_src) {
    setup(ctx, src_md, batch_norm_config<N>(batch), p, need_diff_src);
  }

  void setup(context& ctx, const desc& src_md, const config& c, ParamSlots p, bool) {
    using namespace dnnl;
    using flags = normalization_flags;
    const auto& eng = ctx.engine();
    config_ = c;
    const bool relu = c.act == simd::activation::relu;
    const flags train = flags::use_scale | flags::use_shift | (relu ? flags::fuse_norm_relu : flags::none);
    const flags eval = train | flags::use_global_stats;
    // ReLU runs inside the primitive (fuse_norm_relu); the others (ReLU6 too: batch norm takes no post-op) need
    // the separate kernel.
    const simd::activation separate = relu ? simd::activation::none : c.act;

    const desc work = layout_with_kernel(eng, src_md, c.eps, train);
    src_.setup(ctx, src_md, work);
    for (int m = 0; m < 2; ++m) {
      const bool training = m == kTrain;
      mode& s = modes_[m];
      s.fwd_pd = checked("batch_norm2d forward", [&] {
        return compat::batch_norm_forward(eng, prop_kind::forward_training, work, c.eps, training ? train : eval);
      });
      s.fwd = batch_normalization_forward(s.fwd_pd);
      auto bwd_pd = checked("batch_norm2d backward", [&] {
        return compat::batch_norm_backward(eng, prop_kind::backward, work, work, c.eps, training ? train : eval,
                                           s.fwd_pd);
      });
      s.bwd = batch_normalization_backward(bwd_pd);
      // Not every implementation keeps a workspace (oneDNN 3.7's AVX2 kernel in eval mode has none), and oneDNN 3
      // refuses an argument the primitive does not take.
      if (relu && s.fwd_pd.workspace_desc().get_size() > 0) s.workspace = memory(s.fwd_pd.workspace_desc(), eng);
    }
    const auto& pd = modes_[kTrain].fwd_pd;
    const desc channel_md({c.channels}, dt::f32, tag::x);
    scale_ = memory(channel_md, eng, p.weights);
    shift_ = memory(channel_md, eng, p.bias);
    diff_scale_ = memory(channel_md, eng, p.diff_weights);
    diff_shift_ = memory(channel_md, eng, p.diff_bias);
    mean_ = memory(pd.mean_desc(), eng);
    variance_ = memory(pd.variance_desc(), eng);
    running_mean_ = memory(pd.mean_desc(), eng, p.buffers);
    running_variance_ = memory(pd.variance_desc(), eng, p.buffers + c.channels);
    dst_ = memory(pd.dst_desc(), eng);
    diff_src_ = memory(work, eng);  // the primitive always computes it; the Model may not read it
    act_.setup(ctx, separate, pd.dst_desc(), /*in_primitive=*/false);
  }

  void set_mode(const ForwardMode& m) noexcept { training_ = m.training; }
  /// Whether the op converts its input into another layout, where oneDNN has a kernel (what tests check).
  bool converts_input() const noexcept { return src_.needed(); }

  desc dst_desc() const { return dst_.get_desc(); }
  const memory& dst() const noexcept { return dst_; }
  desc diff_src_desc() const { return diff_src_.get_desc(); }
  const memory& diff_src() const noexcept { return diff_src_; }
  void bind_diff_dst(context& ctx, const desc& d) { diff_dst_.setup(ctx, d, dst_.get_desc()); }

  void forward(context& ctx, const memory& src) { forward(ctx, src, metrics::no_probe); }
  void backward(context& ctx, const memory& src, const memory& diff_dst) {
    backward(ctx, src, diff_dst, metrics::no_probe);
  }

  /// Reports an activation after the normalisation apart (a ReLU is inside the primitive).
  template <class Probe>
  void forward(context& ctx, const memory& src, Probe& probe) {
    probe.begin(metrics::OpKind::batch_norm);
    if (&src != bound_src_) bind_src(src);
    src_.run(ctx, src);
    last_ = training_ ? kTrain : kEval;
    if (training_) BatchNorm2d::require_batch_statistics(config_.per_channel());
    mode& s = modes_[last_];
    run(ctx, s.fwd, s.fwd_args);
    if (training_) update_running_statistics();
    if (act_.active()) probe.begin(activation_kind(act_.kind(), metrics::Direction::forward));
    act_.forward(dst_);
  }

  /// `src` must be the tensor of the last forward(); differentiates the mode that forward ran in.
  template <class Probe>
  void backward(context& ctx, const memory& src, const memory& diff_dst, Probe& probe) {
    if (&src != bound_src_) bind_src(src);
    if (&diff_dst != bound_diff_dst_) bind_diff_dst_tensor(diff_dst);
    if (act_.active()) probe.begin(activation_kind(act_.kind(), metrics::Direction::backward));
    diff_dst_.run(ctx, diff_dst);
    act_.backward(dst_, diff_dst_.target_for(diff_dst));
    probe.begin(metrics::OpKind::batch_norm_backward);
    mode& s = modes_[last_];
    run(ctx, s.bwd, s.bwd_args);
  }

  /// `src_md` if oneDNN's batch normalisation has a jit kernel for it (not its reference loop, nor its NCHW loop),
  /// else the first of 16- and 8-channel blocks and NHWC that has one (the top of the file says why).
  static desc layout_with_kernel(const dnnl::engine& eng, const desc& src_md, float eps,
                                 dnnl::normalization_flags flags) {
    const auto has_kernel = [&](const desc& d) {
      try {
        const std::string impl =  // a copy: the name lives in the primitive descriptor, a temporary
            compat::batch_norm_forward(eng, dnnl::prop_kind::forward_training, d, eps, flags).impl_info_str();
        return !names_reference_loop(impl) && !impl.starts_with("ncsp");
      } catch (const dnnl::error&) {
        return false;
      }
    };
    const dims d = compat::dims_of(src_md);
    if (d.size() != 4 || has_kernel(src_md)) return src_md;
    for (const tag t : {tag::aBcd16b, tag::aBcd8b, tag::acdb})
      if (const desc candidate(d, compat::data_type_of(src_md), t); has_kernel(candidate)) return candidate;
    return src_md;
  }

 private:
  static constexpr int kTrain = 0, kEval = 1;
  struct mode {
    dnnl::batch_normalization_forward::primitive_desc fwd_pd;
    dnnl::batch_normalization_forward fwd;
    dnnl::batch_normalization_backward bwd;
    memory workspace;
    bound_args fwd_args, bwd_args;
  };

  void bind_src(const memory& given) {
    bound_src_ = &given;
    const memory& src = src_.target_for(given);
    for (int m = 0; m < 2; ++m) {
      mode& s = modes_[m];
      const memory& mean = m == kTrain ? mean_ : running_mean_;
      const memory& variance = m == kTrain ? variance_ : running_variance_;
      s.fwd_args = {{DNNL_ARG_SRC, src},          {DNNL_ARG_DST, dst_},           {DNNL_ARG_SCALE, scale_},
                    {DNNL_ARG_SHIFT, shift_},     {DNNL_ARG_MEAN, mean},          {DNNL_ARG_VARIANCE, variance}};
      s.bwd_args.set(DNNL_ARG_SRC, src);
      s.bwd_args.set(DNNL_ARG_MEAN, mean);
      s.bwd_args.set(DNNL_ARG_VARIANCE, variance);
      s.bwd_args.set(DNNL_ARG_SCALE, scale_);
      if constexpr (compat::kBatchNormBackwardTakesShift) s.bwd_args.set(DNNL_ARG_SHIFT, shift_);
      s.bwd_args.set(DNNL_ARG_DIFF_SRC, diff_src_);
      s.bwd_args.set(DNNL_ARG_DIFF_SCALE, diff_scale_);
      s.bwd_args.set(DNNL_ARG_DIFF_SHIFT, diff_shift_);
      if (s.workspace) {
        s.fwd_args.emplace(DNNL_ARG_WORKSPACE, s.workspace);
        s.bwd_args.set(DNNL_ARG_WORKSPACE, s.workspace);
      }
    }
  }
  void bind_diff_dst_tensor(const memory& diff_dst) {
    bound_diff_dst_ = &diff_dst;
    const memory& dz = act_.target_for(diff_dst_.target_for(diff_dst));
    for (mode& s : modes_) s.bwd_args.set(DNNL_ARG_DIFF_DST, dz);
  }

  /// running_mean_ and running_variance_ are the layer's two halves of its buffer slice.
  void update_running_statistics() {
    BatchNorm2d::update_running_statistics({static_cast<float*>(running_mean_.get_data_handle()),
                                            2 * std::size_t(config_.channels)},
                                           static_cast<const float*>(mean_.get_data_handle()),
                                           static_cast<const float*>(variance_.get_data_handle()),
                                           config_.per_channel());
  }

  config config_{};
  bool training_ = true;
  int last_ = kTrain;
  mode modes_[2];
  memory scale_, shift_, diff_scale_, diff_shift_, mean_, variance_, running_mean_, running_variance_;
  memory dst_, diff_src_;
  const memory* bound_src_ = nullptr;
  const memory* bound_diff_dst_ = nullptr;
  converter src_, diff_dst_;
  fused_activation act_;
};

}  // namespace sinew::backend::onednn

namespace sinew::backend {
template <>
struct op_for<layer_kind::batch_norm, OneDnn> {
  using type = onednn::batch_norm_op;
};
}  // namespace sinew::backend
