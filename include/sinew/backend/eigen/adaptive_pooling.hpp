// sinew/backend/eigen/adaptive_pooling.hpp: AdaptiveAvgPool and GlobalAvgPool with PyTorch's bins, on NHWC.
//
// Output cell (i, j) averages input rows [floor(i H / OH), ceil((i + 1) H / OH)) and the columns likewise; the
// bins may differ in size, overlap, or replicate pixels (AlexNet's 1x1 -> 6x6). GlobalAvgPool is the one bin
// covering the whole map. Forward runs over output rows on the Eigen pool; backward gathers, for each input
// row, the gradients of the bins that cover it (bins are monotone, so those form one range per axis), so
// rows run in parallel without atomics. Both sum C-float runs of one pixel with xsimd: Eigen has no
// expression for bins of varying size (TensorFlow has no adaptive pooling op; it computes a global average
// as a `mean` reduction, which is this op's one-bin case).
#pragma once

#include <vector>

#include "sinew/backend/eigen/common.hpp"
#include "sinew/backend/generic/adaptive_bins.hpp"

namespace sinew::backend::eigen {

class adaptive_pool_op : public op_base<> {
 public:
  using config = AdaptivePoolConfig;

  template <NodeType N>
  void setup(context& ctx, const tensor_desc& src_desc, int batch, ParamSlots, bool need_diff_src) {
    setup(ctx, src_desc, adaptive_pool_config<N>(batch), need_diff_src);
  }

  void setup(context& ctx, const tensor_desc& src_desc, const config& c, bool need_diff_src) {
    c_ = c;
    need_diff_src_ = need_diff_src;
    const tensor_desc in = make_desc(c.batch, c.channels, c.in_h, c.in_w, layout::nhwc);
    src_.setup(ctx, src_desc, in);
    dst_.allocate(make_desc(c.batch, c.channels, c.out_h, c.out_w, layout::nhwc));
    if (need_diff_src) diff_src_.allocate(in);
    rows_ = generic::adaptive_axis(c.in_h, c.out_h);
    cols_ = generic::adaptive_axis(c.in_w, c.out_w);
  }

  template <class = void>  // instantiated only if used: see common.hpp, "Compile time"
  void forward(context& ctx, const tensor& src) {
    const float* x = src_(ctx, src).data;
    const int C = c_.channels, OH = c_.out_h, OW = c_.out_w, H = c_.in_h, W = c_.in_w;
    const double cost = double(H) * W * C / OH + double(OW) * C;
    parallel_for(ctx.dev(), index(c_.batch) * OH, cost, [&](index begin, index end) {
      for (index row = begin; row < end; ++row) {
        const int n = int(row / OH), i = int(row % OH);
        for (int j = 0; j < OW; ++j) {
          float* out = dst_.data() + ((index(n) * OH + i) * OW + j) * C;
          std::fill(out, out + C, 0.0f);
          for (int r = rows_.begin[i]; r < rows_.end[i]; ++r)
            for (int s = cols_.begin[j]; s < cols_.end[j]; ++s)
              accumulate(out, x + ((index(n) * H + r) * W + s) * C, 1.0f, C);
          const float scale = 1.0f / float(rows_.size(i) * cols_.size(j));
          for (int ch = 0; ch < C; ++ch) out[ch] *= scale;
        }
      }
    });
  }

  /// dx[n, r, s, :] = the sum of dy[n, i, j, :] / |bin (i, j)| over the bins that cover (r, s).
  template <class = void>  // instantiated only if used: see common.hpp, "Compile time"
  void backward(context& ctx, const tensor&, const tensor& diff_dst) {
    if (!need_diff_src_) return;  // no parameters: nothing else to compute
    const float* dy = diff_dst_(ctx, diff_dst).data;
    const int C = c_.channels, OH = c_.out_h, OW = c_.out_w, H = c_.in_h, W = c_.in_w;
    parallel_for(ctx.dev(), index(c_.batch) * H, double(W) * C * 2, [&](index begin, index end) {
      for (index row = begin; row < end; ++row) {
        const int n = int(row / H), r = int(row % H);
        for (int s = 0; s < W; ++s) {
          float* out = diff_src_.data() + ((index(n) * H + r) * W + s) * C;
          std::fill(out, out + C, 0.0f);
          for (int i = rows_.first_cover[r]; i < rows_.last_cover[r]; ++i)
            for (int j = cols_.first_cover[s]; j < cols_.last_cover[s]; ++j) {
              const float scale =
                  1.0f / float(rows_.size(i) * cols_.size(j));
              accumulate(out, dy + ((index(n) * OH + i) * OW + j) * C, scale, C);
            }
        }
      }
    });
  }

 private:
  /// out[0, C) += scale * in[0, C).
  static void accumulate(float* out, const float* in, float scale, int C) {
    simd::transform(0, std::size_t(C), [&](auto v, std::size_t k) {
      using V = decltype(v);
      simd::store(out + k, simd::fma(simd::load<V>(in + k), V(scale), simd::load<V>(out + k)));
    });
  }

  config c_{};
  generic::adaptive_axis rows_, cols_;
  converter src_;
};

}  // namespace sinew::backend::eigen

namespace sinew::backend {
template <>
struct op_for<layer_kind::adaptive_pooling, Eigen> {
  using type = eigen::adaptive_pool_op;
};
}  // namespace sinew::backend
