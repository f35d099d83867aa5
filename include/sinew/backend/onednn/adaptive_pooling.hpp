// sinew/backend/onednn/adaptive_pooling.hpp: AdaptiveAvgPool and GlobalAvgPool.
//
// When the output divides the input (H % OH == 0 and W % OW == 0; always for GlobalAvgPool) PyTorch's bins
// are a plain average pooling with kernel = stride = H / OH, and oneDNN runs it in the layout the previous
// layer produced. Otherwise the bins differ in size, may overlap, or replicate pixels (OH > H), and sinew
// computes them itself on plain NCHW: bin i covers rows [floor(i H / OH), ceil((i + 1) H / OH)).
#pragma once

#include <algorithm>
#include <cstddef>

#include "sinew/backend/generic/adaptive_bins.hpp"
#include "sinew/backend/onednn/common.hpp"
#include "sinew/core/parallel.hpp"

namespace sinew::backend::onednn {

class adaptive_pool_op : public op_base {
 public:
  using config = AdaptivePoolConfig;

  template <NodeType N>
  void setup(context& ctx, const desc& src_md, int batch, ParamSlots, bool need_diff_src) {
    setup(ctx, src_md, adaptive_pool_config<N>(batch), need_diff_src);
  }

  void setup(context& ctx, const desc& src_md, const config& c, bool need_diff_src) {
    config_ = c;
    need_diff_src_ = need_diff_src;
    uniform_ = compat::dims_of(src_md).size() == 4 && c.in_h % c.out_h == 0 && c.in_w % c.out_w == 0;
    if (uniform_)
      setup_onednn(ctx, src_md);
    else
      setup_bins(ctx, src_md);
  }

  void forward(context& ctx, const memory& src) {
    if (!uniform_) {
      bins_forward(static_cast<const float*>(to_plain_(ctx, src).get_data_handle()),
                   static_cast<float*>(dst_.get_data_handle()));
      return;
    }
    if (&src != bound_src_) {
      bound_src_ = &src;
      fwd_args_ = {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst_}};
    }
    run(ctx, fwd_, fwd_args_);
  }

  void backward(context& ctx, const memory&, const memory& diff_dst) {
    if (!need_diff_src_) return;  // no parameters: nothing else to compute
    if (!uniform_) {
      bins_backward(static_cast<const float*>(diff_dst_(ctx, diff_dst).get_data_handle()),
                    static_cast<float*>(diff_src_.get_data_handle()));
      return;
    }
    if (&diff_dst != bound_diff_dst_) {
      bound_diff_dst_ = &diff_dst;
      bwd_args_ = {{DNNL_ARG_DIFF_DST, diff_dst_.target_for(diff_dst)}, {DNNL_ARG_DIFF_SRC, diff_src_}};
    }
    diff_dst_.run(ctx, diff_dst);
    run(ctx, bwd_, bwd_args_);
  }

 private:
  void setup_onednn(context& ctx, const desc& src_md) {
    using namespace dnnl;
    const config& c = config_;
    const auto& eng = ctx.engine();
    const auto alg = algorithm::pooling_avg_exclude_padding;
    const dims kernel{c.in_h / c.out_h, c.in_w / c.out_w}, pad{0, 0};
    const desc dst_any({c.batch, c.channels, c.out_h, c.out_w}, dt::f32, tag::any);
    auto fwd_pd = checked("adaptive average pooling forward", [&] {
      return compat::pooling_forward(eng, prop_kind::forward_training, alg, src_md, dst_any, kernel, kernel, pad, pad);
    });
    fwd_ = pooling_forward(fwd_pd);
    dst_ = memory(fwd_pd.dst_desc(), eng);
    if (need_diff_src_) {
      auto bwd_pd = checked("adaptive average pooling backward", [&] {
        return compat::pooling_backward(eng, alg, src_md, fwd_pd.dst_desc(), kernel, kernel, pad, pad, fwd_pd);
      });
      bwd_ = pooling_backward(bwd_pd);
      diff_src_ = memory(bwd_pd.diff_src_desc(), eng);
    }
  }

  void setup_bins(context& ctx, const desc& src_md) {
    const config& c = config_;
    const desc plain = plain_like(src_md);
    to_plain_.setup(ctx, src_md, plain);
    dst_ = memory(plain_desc(c.batch, c.channels, c.out_h, c.out_w), ctx.engine());
    if (need_diff_src_) diff_src_ = memory(plain, ctx.engine());
    cells_ = generic::adaptive_cells(c.in_h, c.in_w, c.out_h, c.out_w);
  }

  // Both passes walk each plane through cells_' lists (generic::adaptive_cells): looping over the two axes'
  // bounds per cell took AlexNet's pool (1x1 -> 6x6) 1.0 ms forward and 1.5 backward at batch 42 for 1.5 MB of
  // output (bench/results/2026-12-02-zen5-adaptive-pool-cells).
  void bins_forward(const float* x, float* y) const {
    const std::size_t planes = std::size_t(config_.batch) * config_.channels, cells = cells_.size(),
                      pixels = std::size_t(config_.in_h) * config_.in_w;
    parallel_ranges(planes, [&](std::size_t begin, std::size_t end) {
      for (std::size_t p = begin; p < end; ++p) cells_.pool(x + p * pixels, y + p * cells);
    }, 1, 64);
  }

  /// Each input pixel receives dy / |bin| from every bin that covers it (bins may overlap).
  void bins_backward(const float* dy, float* dx) const {
    const std::size_t planes = std::size_t(config_.batch) * config_.channels, cells = cells_.size(),
                      pixels = std::size_t(config_.in_h) * config_.in_w;
    parallel_ranges(planes, [&](std::size_t begin, std::size_t end) {
      std::fill(dx + begin * pixels, dx + end * pixels, 0.0f);
      for (std::size_t p = begin; p < end; ++p) cells_.unpool_add(dy + p * cells, dx + p * pixels);
    }, 1, 64);
  }

  config config_{};
  bool uniform_ = true;
  dnnl::pooling_forward fwd_;
  dnnl::pooling_backward bwd_;
  converter to_plain_;
  const memory* bound_src_ = nullptr;
  const memory* bound_diff_dst_ = nullptr;
  bound_args fwd_args_, bwd_args_;
  generic::adaptive_cells cells_;
};

}  // namespace sinew::backend::onednn

namespace sinew::backend {
template <>
struct op_for<layer_kind::adaptive_pooling, OneDnn> {
  using type = onednn::adaptive_pool_op;
};
}  // namespace sinew::backend
