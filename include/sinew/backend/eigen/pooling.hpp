// sinew/backend/eigen/pooling.hpp: MaxPool and AvgPool with PyTorch's semantics, on NHWC.
//
// Max pooling ignores padding and routes the gradient to the first maximum of each window, whose position
// it keeps in an index workspace at forward (as oneDNN and PyTorch do). Average pooling divides by K*K,
// padding included (PyTorch's count_include_pad=True). The windows are hand-written loops over output
// rows on the Eigen pool, with the channels innermost and contiguous, so the inner loops are xsimd over C:
// Eigen's own SpatialMaxPooling (extract_image_patches + maximum) neither yields the argmax nor a backward.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "sinew/backend/eigen/common.hpp"

namespace sinew::backend::eigen {

class pooling_op : public op_base<> {
 public:
  struct config {
    int batch, c, h, w, out_h, out_w, kernel, stride, padding;
    bool max;
  };

  template <NodeType N>
  void setup(context& ctx, const tensor_desc& src_desc, int batch, ParamSlots, bool need_diff_src) {
    using L = typename N::layer;
    using In = typename N::input;
    using Out = typename N::output;
    constexpr bool is_max = std::is_same_v<L, MaxPool<L::kKernel, L::kStride, L::kPadding>>;
    setup(ctx, src_desc,
          config{batch, In::kChannels, In::kHeight, In::kWidth, Out::kHeight, Out::kWidth, L::kKernel, L::kStride,
                 L::kPadding, is_max},
          need_diff_src);
  }

  void setup(context& ctx, const tensor_desc& src_desc, const config& c, bool need_diff_src) {
    c_ = c;
    need_diff_src_ = need_diff_src;
    const tensor_desc in = make_desc(c.batch, c.c, c.h, c.w, layout::nhwc);
    src_.setup(ctx, src_desc, in);
    dst_.allocate(make_desc(c.batch, c.c, c.out_h, c.out_w, layout::nhwc));
    if (c.max) argmax_ = AlignedBuffer<std::int32_t>(dst_.desc().size());
    if (need_diff_src) diff_src_.allocate(in);
  }

  template <class = void>  // instantiated only if used: see common.hpp, "Compile time"
  void forward(context& ctx, const tensor& src) {
    const float* x = src_(ctx, src).data;
    const int C = c_.c, K = c_.kernel;
    const double cost = double(c_.out_w) * K * K * C;
    parallel_for(ctx.dev(), index(c_.batch) * c_.out_h, cost, [&](index begin, index end) {
      for (index row = begin; row < end; ++row) {
        const int n = int(row / c_.out_h), oh = int(row % c_.out_h);
        for (int ow = 0; ow < c_.out_w; ++ow) {
          const index o = ((index(n) * c_.out_h + oh) * c_.out_w + ow) * C;
          if (c_.max)
            max_window(x, n, oh, ow, dst_.data() + o, argmax_.data() + o);
          else
            avg_window(x, n, oh, ow, dst_.data() + o);
        }
      }
    });
  }

  template <class = void>  // instantiated only if used: see common.hpp, "Compile time"
  void backward(context& ctx, const tensor&, const tensor& diff_dst) {
    if (!need_diff_src_) return;  // no parameters: nothing else to compute
    const float* dy = diff_dst_(ctx, diff_dst).data;
    if (c_.max)
      max_backward(ctx.dev(), dy);
    else
      avg_backward(ctx.dev(), dy);
  }

 private:
  /// The window of output (oh, ow) clipped to the image: [h0, h1) x [w0, w1).
  void window(int oh, int ow, int& h0, int& h1, int& w0, int& w1) const {
    h0 = oh * c_.stride - c_.padding;
    w0 = ow * c_.stride - c_.padding;
    h1 = std::min(h0 + c_.kernel, c_.h);
    w1 = std::min(w0 + c_.kernel, c_.w);
    h0 = std::max(h0, 0);
    w0 = std::max(w0, 0);
  }

  /// Channels in the scalar loop: a compare-and-select with an index does not map onto Eigen expressions,
  /// and the compiler vectorises this loop (blend) at -O2 -march=native.
  void max_window(const float* x, int n, int oh, int ow, float* out, std::int32_t* arg) const {
    const int C = c_.c;
    int h0, h1, w0, w1;
    window(oh, ow, h0, h1, w0, w1);
    std::fill(out, out + C, -std::numeric_limits<float>::infinity());
    std::fill(arg, arg + C, std::int32_t(h0 * c_.w + w0));
    for (int ih = h0; ih < h1; ++ih)
      for (int iw = w0; iw < w1; ++iw) {
        const std::int32_t pos = ih * c_.w + iw;
        const float* in = x + ((index(n) * c_.h + ih) * c_.w + iw) * C;
        for (int ch = 0; ch < C; ++ch) {
          const bool greater = in[ch] > out[ch];
          out[ch] = greater ? in[ch] : out[ch];
          arg[ch] = greater ? pos : arg[ch];
        }
      }
  }

  void avg_window(const float* x, int n, int oh, int ow, float* out) const {
    const int C = c_.c;
    int h0, h1, w0, w1;
    window(oh, ow, h0, h1, w0, w1);
    std::fill(out, out + C, 0.0f);
    for (int ih = h0; ih < h1; ++ih)
      for (int iw = w0; iw < w1; ++iw) {
        const float* in = x + ((index(n) * c_.h + ih) * c_.w + iw) * C;
        simd::transform(0, std::size_t(C), [&](auto v, std::size_t i) {
          using V = decltype(v);
          simd::store(out + i, simd::load<V>(out + i) + simd::load<V>(in + i));
        });
      }
    const float scale = 1.0f / float(c_.kernel * c_.kernel);
    for (int ch = 0; ch < C; ++ch) out[ch] *= scale;
  }

  /// Scatters each output gradient to its argmax. Windows of one image may overlap, so images (not rows)
  /// are the unit of parallel work.
  void max_backward(const device& dev, const float* dy) {
    const int C = c_.c;
    const index image_in = index(c_.h) * c_.w * C, image_out = index(c_.out_h) * c_.out_w * C;
    float* dx = diff_src_.data();
    parallel_for(dev, c_.batch, double(image_in + image_out), [&](index begin, index end) {
      for (index n = begin; n < end; ++n) {
        float* d = dx + n * image_in;
        std::fill(d, d + image_in, 0.0f);
        const float* g = dy + n * image_out;
        const std::int32_t* arg = argmax_.data() + n * image_out;
        for (index o = 0; o < image_out; ++o) d[index(arg[o]) * C + o % C] += g[o];
      }
    });
  }

  /// dX[n, ih, iw, :] = sum of dY[n, oh, ow, :] / K^2 over the windows that cover (ih, iw).
  void avg_backward(const device& dev, const float* dy) {
    const int OH = c_.out_h, OW = c_.out_w, C = c_.c, K = c_.kernel;
    window_gather(dev, {c_.batch, c_.h, c_.w, C, OH, OW, K, c_.stride, c_.padding}, diff_src_.data(),
                  1.0f / float(K * K),
                  [&](int n, int oh, int ow, int, int) { return dy + ((index(n) * OH + oh) * OW + ow) * C; });
  }

  config c_{};
  converter src_;
  AlignedBuffer<std::int32_t> argmax_;
};

}  // namespace sinew::backend::eigen

namespace sinew::backend {
template <>
struct op_for<layer_kind::pooling, Eigen> {
  using type = eigen::pooling_op;
};
}  // namespace sinew::backend
