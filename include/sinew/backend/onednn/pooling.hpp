// sinew/backend/onednn/pooling.hpp: MaxPool and AvgPool; max pooling keeps its forward workspace. Average pooling
// over non-overlapping windows of a plain NCHW input of at most 16 channels (what the thin convolutions leave) runs
// on sinew's own loops (backend/simd/avg_pool.hpp), where oneDNN would transpose to its blocked layout and back.
#pragma once

#include <cstring>

#include "sinew/backend/onednn/common.hpp"
#include "sinew/backend/simd/avg_pool.hpp"

namespace sinew::backend::onednn {

class pooling_op {
 public:
  template <NodeType N>
  void setup(context& ctx, const desc& src_md, int batch, ParamSlots, bool need_diff_src) {
    using L = typename N::layer;
    using Out = typename N::output;
    constexpr bool is_max = std::is_same_v<L, MaxPool<L::kKernel, L::kStride, L::kPadding>>;
    setup(ctx, src_md, batch, Out::kChannels, Out::kHeight, Out::kWidth, L::kKernel, L::kStride, L::kPadding,
          is_max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_include_padding, need_diff_src);
  }

  void setup(context& ctx, const desc& src_md, int batch, int c, int oh, int ow, int kernel, int stride, int padding,
             dnnl::algorithm alg, bool need_diff_src) {
    using namespace dnnl;
    const auto& eng = ctx.engine();
    need_diff_src_ = need_diff_src;
    const auto in = compat::dims_of(src_md);
    own_ = alg == algorithm::pooling_avg_include_padding && padding == 0 && kernel == stride && in.size() == 4 &&
           in[1] <= 16 && src_md == plain_like(src_md) && oh == in[2] / kernel && ow == in[3] / kernel;
    if (own_) {
      threads_ = ctx.threads(), kernel_ = kernel;
      planes_ = in[0] * in[1], in_h_ = int(in[2]), in_w_ = int(in[3]);
      src_md_ = src_md;
      dst_md_ = desc({batch, c, oh, ow}, dt::f32, tag::nchw);
      bwd_diff_dst_desc_ = dst_md_;
      dst_ = memory(dst_md_, eng);
      if (need_diff_src) diff_src_ = memory(src_md, eng);
      return;
    }
    const dims strides{stride, stride}, k{kernel, kernel}, pad{padding, padding};
    const desc dst_any({batch, c, oh, ow}, dt::f32, tag::any);
    const auto forward_pd = [&](const desc& src) {
      return checked("pooling forward", [&] {
        return compat::pooling_forward(eng, prop_kind::forward_training, alg, src, dst_any, strides, k, pad, pad);
      });
    };
    // The input keeps the layout the previous layer produced: pooling runs on any layout. Except plain NCHW of 8
    // channels or more where oneDNN has only its C++ loop for it (simple_nchw): there the input is reordered to
    // the channel-blocked layout of the ISA's convolutions first. AlexNet's first convolution (3 -> 64 channels,
    // 11x11 stride 4) leaves plain NCHW without AVX-512 kernels (oneDNN runs it as a gemm), and its max pooling
    // ran hundreds of times slower there than the jit kernel on the blocked layout of the next one
    // (figures: bench/README.md, "Why the kernels are as they are").
    src_md_ = src_md;
    fwd_pd_ = forward_pd(src_md);
    const auto dims_of_src = compat::dims_of(src_md);
    if (dims_of_src.size() == 4 && dims_of_src[1] >= 8 && src_md == plain_like(src_md) &&
        std::strncmp(fwd_pd_.impl_info_str(), "simple", 6) == 0) {
      const desc blocked(dims_of_src, dt::f32, onednn_runs_avx512() ? tag::nChw16c : tag::nChw8c);
      auto pd = forward_pd(blocked);
      if (std::strncmp(pd.impl_info_str(), "simple", 6) != 0 && !names_reference_loop(pd.impl_info_str())) {
        fwd_pd_ = pd;
        src_md_ = blocked;
      }
    }
    src_.setup(ctx, src_md, src_md_);
    fwd_ = pooling_forward(fwd_pd_);
    dst_md_ = fwd_pd_.dst_desc();
    dst_ = memory(dst_md_, eng);
    if (alg == algorithm::pooling_max) workspace_ = memory(fwd_pd_.workspace_desc(), eng);
    if (need_diff_src) {
      auto bwd_pd = checked("pooling backward", [&] {
        return compat::pooling_backward(eng, alg, src_md_, fwd_pd_.dst_desc(), strides, k, pad, pad, fwd_pd_);
      });
      bwd_ = pooling_backward(bwd_pd);
      bwd_diff_dst_desc_ = bwd_pd.diff_dst_desc();
      diff_src_ = memory(bwd_pd.diff_src_desc(), eng);
    }
  }

  desc dst_desc() const { return dst_md_; }
  /// Whether sinew's own average-pooling loops run it rather than oneDNN (see the file comment).
  bool runs_own_loops() const noexcept { return own_; }
  /// The layout the forward reads its input in: the previous layer's, or the blocked one it is reordered to.
  desc src_desc() const { return src_md_; }
  const memory& dst() const noexcept { return dst_; }
  desc diff_src_desc() const { return diff_src_ ? diff_src_.get_desc() : desc(); }
  const memory& diff_src() const noexcept { return diff_src_; }
  void bind_diff_dst(context& ctx, const desc& d) {
    if (need_diff_src_) diff_dst_.setup(ctx, d, bwd_diff_dst_desc_);
  }

  void forward(context& ctx, const memory& src) {
    if (own_) {
      simd::avg_pool_forward(static_cast<const float*>(src.get_data_handle()),
                             static_cast<float*>(dst_.get_data_handle()), planes_, in_h_, in_w_, kernel_, threads_);
      return;
    }
    if (&src != bound_src_) {
      bound_src_ = &src;
      fwd_args_ = {{DNNL_ARG_SRC, src_.target_for(src)}, {DNNL_ARG_DST, dst_}};
      if (workspace_) fwd_args_.emplace(DNNL_ARG_WORKSPACE, workspace_);
    }
    src_.run(ctx, src);
    run(ctx, fwd_, fwd_args_);
  }

  void backward(context& ctx, const memory&, const memory& diff_dst) {
    if (!need_diff_src_) return;  // no parameters: nothing else to compute
    if (own_) {
      simd::avg_pool_backward(static_cast<const float*>(diff_dst_(ctx, diff_dst).get_data_handle()),
                              static_cast<float*>(diff_src_.get_data_handle()), planes_, in_h_, in_w_, kernel_,
                              threads_);
      return;
    }
    if (&diff_dst != bound_diff_dst_) {
      bound_diff_dst_ = &diff_dst;
      bwd_args_ = {{DNNL_ARG_DIFF_DST, diff_dst_.target_for(diff_dst)}, {DNNL_ARG_DIFF_SRC, diff_src_}};
      if (workspace_) bwd_args_.emplace(DNNL_ARG_WORKSPACE, workspace_);
    }
    diff_dst_.run(ctx, diff_dst);
    run(ctx, bwd_, bwd_args_);
  }

 private:
  bool need_diff_src_ = false;
  /// Whether sinew's own loops run it (see the file comment), and their shape.
  bool own_ = false;
  int threads_ = 1, kernel_ = 1, in_h_ = 0, in_w_ = 0;
  std::ptrdiff_t planes_ = 0;
  dnnl::pooling_forward::primitive_desc fwd_pd_;
  dnnl::pooling_forward fwd_;
  dnnl::pooling_backward bwd_;
  desc src_md_, dst_md_, bwd_diff_dst_desc_;
  memory dst_, workspace_, diff_src_;
  converter src_, diff_dst_;
  const memory* bound_src_ = nullptr;
  const memory* bound_diff_dst_ = nullptr;
  bound_args fwd_args_, bwd_args_;
};

}  // namespace sinew::backend::onednn

namespace sinew::backend {
template <>
struct op_for<layer_kind::pooling, OneDnn> {
  using type = onednn::pooling_op;
};
}  // namespace sinew::backend
