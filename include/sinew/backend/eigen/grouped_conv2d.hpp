// sinew/backend/eigen/grouped_conv2d.hpp: the grouped and dilated forms of Conv2d on the Eigen backend, NHWC.
//
// Depthwise (groups equal to the input's and the output's channels, MobileNet's 3x3 layers): its own kernel, as
// TensorFlow's DepthwiseConv2D has one (depthwise_conv_op.h) rather than a convolution per channel: each output
// pixel's C channels are the sum over the window's taps of the input pixel's C channels times the tap's C
// weights, an xsimd loop over the channels that NHWC lays contiguous, each vector's sum held in a register over the
// window (a matrix product per channel would be C products of one column). The weights are held tap-major,
// [K*K, C], so that a tap's weights are one vector too. Backward data gathers, for each input pixel, the windows
// that cover it (no two threads write one pixel);
// backward weights accumulates dZ * X per tap and channel over a share of the output rows on each thread, and
// the shares' sums are added.
//
// Any other group count or a dilation: the im2col + GEMM of conv2d.hpp per group. Each group's patches are its
// In/G channels of each tap (taps Dilation pixels apart), packed block by block as the product reads them, and
// multiplied by its HWIO weights [K*K*In/G, Out/G] into its Out/G columns of the output rows. The threads share
// out (group, block) pairs; backward weights takes (group, share of the rows) pairs with a partial sum each;
// backward data, dP = dZ_g W_g^T block by block, is added into the input gradient by (group, image) pairs, each
// the only writer of its image's channels of its group. conv2d.hpp's skipping of the padding's zeros is not
// done here: its taps grouping assumes adjacent taps.
#pragma once

#include <algorithm>
#include <vector>

#include "sinew/backend/eigen/common.hpp"
#include "sinew/backend/eigen/gemm.hpp"
#include "sinew/backend/generic/probe.hpp"
#include "sinew/backend/generic/weight_cache.hpp"

namespace sinew::backend::eigen {

/// What the two ops below share: the op contract's entry points (Op's own setup from a config, forward and backward
/// with a probe), the NHWC input and output, the bias and the fused activation.
template <class Op>
class windowed_conv_base : public op_base<diff_dst_use::always> {
 public:
  using config = Conv2dConfig;

  template <NodeType N>
  void setup(context& ctx, const tensor_desc& src_desc, int batch, ParamSlots p, bool need_diff_src) {
    self().setup(ctx, src_desc, conv2d_config<N>(batch), p, need_diff_src);
  }
  /// Whether the next forward may keep the weights it rearranged last time (backend/generic/weight_cache.hpp).
  void set_mode(const ForwardMode& mode) noexcept { weights_cache_.set_mode(mode); }
  template <class = void>  // instantiated only if used: see common.hpp, "Compile time"
  void forward(context& ctx, const tensor& src) { self().forward(ctx, src, metrics::no_probe); }
  template <class = void>  // instantiated only if used: see common.hpp, "Compile time"
  void backward(context& ctx, const tensor& src, const tensor& diff_dst) {
    self().backward(ctx, src, diff_dst, metrics::no_probe);
  }

 protected:
  Op& self() { return static_cast<Op&>(*this); }

  void setup_common(context& ctx, const tensor_desc& src_desc, const config& c, ParamSlots p, bool need_diff_src) {
    c_ = c;
    p_ = p;
    if (!c.bias) p_.bias = p_.diff_bias = nullptr;
    need_diff_src_ = need_diff_src;
    rows_ = index(c.batch) * c.out_h * c.out_w;
    const tensor_desc in = make_desc(c.batch, c.in_c, c.in_h, c.in_w, layout::nhwc);
    src_.setup(ctx, src_desc, in);
    dst_.allocate(make_desc(c.batch, c.out_c, c.out_h, c.out_w, layout::nhwc));
    act_.setup(c.act, dst_.desc().size());
    if (need_diff_src) diff_src_.allocate(in);
  }

  /// After the convolution's sums: the bias, then the activation (a pass of its own under a profiling probe, so
  /// that it is reported as its kind; see metrics/profile.hpp).
  template <class Probe>
  void finish_forward(const device& dev, Probe& probe) {
    const bool split = std::remove_cvref_t<Probe>::kEnabled && act_.active();
    bias_activation(dev, dst_.data(), p_.bias, rows_, c_.out_c, split ? simd::activation::none : c_.act);
    if (split) {
      probe.begin(activation_kind(c_.act, metrics::Direction::forward));
      activation_forward(dev, c_.act, dst_.data(), dst_.data(), dst_.desc().size());
    }
  }

  /// The activation's backward and the bias gradient; returns dL/dz, NHWC [rows, out_c].
  template <class Probe>
  const float* begin_backward(context& ctx, const tensor& diff_dst, Probe& probe) {
    const device& dev = ctx.dev();
    if (act_.active()) probe.begin(activation_kind(c_.act, metrics::Direction::backward));
    const float* dz = act_.backward(dev, dst_.data(), diff_dst_(ctx, diff_dst).data);
    probe.begin(metrics::OpKind::convolution_backward_weights);
    if (p_.diff_bias)
      ::Eigen::TensorMap<::Eigen::Tensor<float, 1, ::Eigen::RowMajor, index>>(p_.diff_bias, c_.out_c).device(dev) =
          as_matrix(dz, rows_, c_.out_c).sum(std::array<index, 1>{0});
    return dz;
  }

  /// The calling thread's buffers: a pool thread's own, or the first for the caller.
  static index slot(const device& dev) { return std::max(dev.currentThreadId(), 0); }

  config c_{};
  ParamSlots p_;
  index rows_ = 0;
  /// The last forward's NHWC input (the converter's buffer where it converted).
  const float* nhwc_ = nullptr;
  converter src_;
  fused_activation act_;
  weight_cache weights_cache_;
};

/// Conv2d with groups == in_c == out_c (Conv2dConfig::is_depthwise), any stride, padding and dilation.
class depthwise_conv2d_op : public windowed_conv_base<depthwise_conv2d_op> {
 public:
  using windowed_conv_base::backward, windowed_conv_base::forward, windowed_conv_base::setup;

  void setup(context& ctx, const tensor_desc& src_desc, const config& c, ParamSlots p, bool need_diff_src) {
    if (!c.is_depthwise())
      throw backend_error("eigen::depthwise_conv2d_op: " + std::to_string(c.groups) + " groups of " +
                          std::to_string(c.in_c) + " -> " + std::to_string(c.out_c) +
                          " channels given; it computes groups == input channels == output channels only");
    setup_common(ctx, src_desc, c, p, need_diff_src);
    const std::size_t taps = std::size_t(c.kernel) * std::size_t(c.kernel) * std::size_t(c.in_c);
    weights_ = AlignedBuffer<float>(taps);
    shares_ = std::max<index>(ctx.threads(), 1);
    partials_ = AlignedBuffer<float>(std::size_t(shares_) * taps);
  }

  template <class Probe>
  void forward(context& ctx, const tensor& src, Probe& probe) {
    const device& dev = ctx.dev();
    probe.begin(metrics::OpKind::convolution);
    nhwc_ = src_(ctx, src).data;
    // PyTorch's [C, 1, K, K] as [K*K, C]: a tap's weights contiguous, as the channel loop reads them.
    const index C = c_.in_c, KK = index(c_.kernel) * c_.kernel;
    if (weights_cache_.take())
      for (index ch = 0; ch < C; ++ch)
        for (index k = 0; k < KK; ++k) weights_.data()[k * C + ch] = p_.weights[ch * KK + k];
    const index OH = c_.out_h, OW = c_.out_w;
    parallel_for(dev, index(c_.batch) * OH, double(OW) * KK * C * 2, [&](index begin, index end) {
      std::vector<const float*> in(static_cast<std::size_t>(KK)), w(in.size());
      for (index row = begin; row < end; ++row) {
        const index n = row / OH, oh = row % OH;
        for (index ow = 0; ow < OW; ++ow) {
          index taps = 0;
          for_taps(oh, ow, [&](index k, index ih, index iw) {
            in[std::size_t(taps)] = nhwc_ + ((n * c_.in_h + ih) * c_.in_w + iw) * C;
            w[std::size_t(taps++)] = weights_.data() + k * C;
          });
          sum_of_products(dst_.data() + ((n * OH + oh) * OW + ow) * C, in.data(), w.data(), taps, C);
        }
      }
    });
    finish_forward(dev, probe);
  }

  /// `src` must be the tensor of the last forward().
  template <class Probe>
  void backward(context& ctx, const tensor& src, const tensor& diff_dst, Probe& probe) {
    const device& dev = ctx.dev();
    const float* dz = begin_backward(ctx, diff_dst, probe);
    const float* x = src_.needed() ? nhwc_ : src.data;
    weights_gradient(dev, x, dz);
    if (!need_diff_src_) return;
    probe.begin(metrics::OpKind::convolution_backward_data);
    data_gradient(dev, dz);
  }

 private:
  /// Calls f(tap, ih, iw) for each tap of output pixel (oh, ow) that falls inside the image.
  template <class F>
  void for_taps(index oh, index ow, F&& f) const {
    const index K = c_.kernel, D = c_.dilation, ih0 = oh * c_.stride - c_.padding, iw0 = ow * c_.stride - c_.padding;
    for (index kh = 0; kh < K; ++kh) {
      const index ih = ih0 + kh * D;
      if (ih < 0 || ih >= c_.in_h) continue;
      for (index kw = 0; kw < K; ++kw) {
        const index iw = iw0 + kw * D;
        if (iw >= 0 && iw < c_.in_w) f(kh * K + kw, ih, iw);
      }
    }
  }

  /// dW[k, c] = sum over output pixels of dZ[pixel, c] * X[its tap k's pixel, c]: each thread sums a share of
  /// the output rows into a partial of its own; the partials are added and laid out as PyTorch's [C, 1, K, K].
  void weights_gradient(const device& dev, const float* x, const float* dz) {
    const index C = c_.in_c, KK = index(c_.kernel) * c_.kernel, OH = c_.out_h, OW = c_.out_w;
    const index out_rows = index(c_.batch) * OH, size = KK * C;
    const index shares = std::min(shares_, out_rows);
    on_pool(dev, shares, [&](index s) {
      float* dw = partials_.data() + s * size;
      std::fill(dw, dw + size, 0.0f);
      for (index row = out_rows * s / shares; row < out_rows * (s + 1) / shares; ++row) {
        const index n = row / OH, oh = row % OH;
        for (index ow = 0; ow < OW; ++ow) {
          const float* g = dz + ((n * OH + oh) * OW + ow) * C;
          for_taps(oh, ow, [&](index k, index ih, index iw) {
            const float* in = x + ((n * c_.in_h + ih) * c_.in_w + iw) * C;
            float* acc = dw + k * C;
            simd::transform(0, std::size_t(C), [&](auto v, std::size_t i) {
              using V = decltype(v);
              simd::store(acc + i, simd::fma(simd::load<V>(in + i), simd::load<V>(g + i), simd::load<V>(acc + i)));
            });
          });
        }
      }
    });
    for (index s = 1; s < shares; ++s) simd::add(partials_.data(), partials_.data() + s * size, partials_.data(), size);
    for (index ch = 0; ch < C; ++ch)
      for (index k = 0; k < KK; ++k) p_.diff_weights[ch * KK + k] = partials_.data()[k * C + ch];
  }

  /// dX[n, ih, iw, :] = sum over the windows that cover (ih, iw) of dZ at the window times its tap's weights, one
  /// input row per task (a gather: no two tasks write one pixel).
  void data_gradient(const device& dev, const float* dz) {
    const index C = c_.in_c, K = c_.kernel, D = c_.dilation, S = c_.stride, P = c_.padding;
    const index H = c_.in_h, W = c_.in_w, OH = c_.out_h, OW = c_.out_w;
    parallel_for(dev, index(c_.batch) * H, double(W) * K * K * C * 2 / double(S * S), [&](index begin, index end) {
      std::vector<const float*> g(static_cast<std::size_t>(K * K)), w(g.size());
      for (index row = begin; row < end; ++row) {
        const index n = row / H, ih = row % H;
        for (index iw = 0; iw < W; ++iw) {
          index taps = 0;
          for (index kh = 0; kh < K; ++kh) {
            const index th = ih + P - kh * D;
            if (th < 0 || th % S || th / S >= OH) continue;
            for (index kw = 0; kw < K; ++kw) {
              const index tw = iw + P - kw * D;
              if (tw < 0 || tw % S || tw / S >= OW) continue;
              g[std::size_t(taps)] = dz + ((n * OH + th / S) * OW + tw / S) * C;
              w[std::size_t(taps++)] = weights_.data() + (kh * K + kw) * C;
            }
          }
          sum_of_products(diff_src_.data() + ((n * H + ih) * W + iw) * C, g.data(), w.data(), taps, C);
        }
      }
    });
  }

  /// out[0, C) = the sum over t < n of a[t][0, C) * b[t][0, C), for a window's n taps: the sums of four vectors
  /// of channels at a time are held in registers over the whole window and stored once (a loop of one tap at a
  /// time over the channels would load and store the outputs again for every tap).
  static void sum_of_products(float* out, const float* const* a, const float* const* b, index n, index C) {
    using V = simd::batch;
    constexpr index kV = index(simd::kWidth);
    index c = 0;
    for (; c + 4 * kV <= C; c += 4 * kV) {
      V s0(0.0f), s1(0.0f), s2(0.0f), s3(0.0f);
      for (index t = 0; t < n; ++t) {
        const float *x = a[t] + c, *y = b[t] + c;
        s0 = simd::fma(simd::load<V>(x), simd::load<V>(y), s0);
        s1 = simd::fma(simd::load<V>(x + kV), simd::load<V>(y + kV), s1);
        s2 = simd::fma(simd::load<V>(x + 2 * kV), simd::load<V>(y + 2 * kV), s2);
        s3 = simd::fma(simd::load<V>(x + 3 * kV), simd::load<V>(y + 3 * kV), s3);
      }
      simd::store(out + c, s0), simd::store(out + c + kV, s1), simd::store(out + c + 2 * kV, s2);
      simd::store(out + c + 3 * kV, s3);
    }
    simd::transform(std::size_t(c), std::size_t(C), [&](auto v, std::size_t i) {
      using T = decltype(v);
      T sum(0.0f);
      for (index t = 0; t < n; ++t) sum = simd::fma(simd::load<T>(a[t] + i), simd::load<T>(b[t] + i), sum);
      simd::store(out + i, sum);
    });
  }

  index shares_ = 1;
  /// weights_: [K*K, C]; partials_: a [K*K, C] weight gradient per share.
  AlignedBuffer<float> weights_, partials_;
};

/// Conv2d with any groups and dilation, each group an im2col + GEMM (see the file comment).
class grouped_conv2d_op : public windowed_conv_base<grouped_conv2d_op> {
 public:
  using windowed_conv_base::backward, windowed_conv_base::forward, windowed_conv_base::setup;

  void setup(context& ctx, const tensor_desc& src_desc, const config& c, ParamSlots p, bool need_diff_src) {
    setup_common(ctx, src_desc, c, p, need_diff_src);
    G_ = c.groups, Cg_ = c.in_c / c.groups, Og_ = c.out_c / c.groups;
    depth_ = index(c.kernel) * c.kernel * Cg_;
    block_ = std::clamp<index>(kBlockFloats / std::max<index>(depth_, 1), 1, kBlockRows);
    const index threads = std::max(ctx.threads(), 1);
    weights_ = AlignedBuffer<float>(std::size_t(G_ * depth_ * Og_));
    diff_weights_ = AlignedBuffer<float>(std::size_t(G_ * depth_ * Og_));
    packs_ = AlignedBuffer<float>(std::size_t(threads * block_ * depth_));
    // Shares of the rows per group for the weights gradient: enough (group, share) pairs for every thread.
    shares_ = std::clamp<index>((threads + G_ - 1) / G_, 1, std::max<index>(rows_ / kBlockRows, 1));
    partials_ = AlignedBuffer<float>(std::size_t((shares_ - 1) * G_ * depth_ * Og_));  // share 0 sums in place
  }

  template <class Probe>
  void forward(context& ctx, const tensor& src, Probe& probe) {
    const device& dev = ctx.dev();
    probe.begin(metrics::OpKind::convolution);
    nhwc_ = src_(ctx, src).data;
    if (weights_cache_.take()) to_group_hwio();
    const index O = c_.out_c, blocks = (rows_ + block_ - 1) / block_;
    on_pool(dev, G_ * blocks, [&](index t) {
      const index g = t % G_, r0 = t / G_ * block_, n = std::min(rows_, r0 + block_) - r0;
      float* packed = packs_.data() + slot(dev) * block_ * depth_;
      pack_rows(nhwc_, g, r0, r0 + n, packed);
      gemm(n, Og_, depth_, {packed, depth_}, {group_weights(g), Og_}, dst_.data() + r0 * O + g * Og_, O);
    });
    finish_forward(dev, probe);
  }

  /// `src` must be the tensor of the last forward().
  template <class Probe>
  void backward(context& ctx, const tensor& src, const tensor& diff_dst, Probe& probe) {
    const device& dev = ctx.dev();
    const float* dz = begin_backward(ctx, diff_dst, probe);
    weights_gradient(dev, src_.needed() ? nhwc_ : src.data, dz);
    if (!need_diff_src_) return;
    probe.begin(metrics::OpKind::convolution_backward_data);
    data_gradient(dev, dz);
  }

 private:
  /// Group g's HWIO weights, [K*K*Cg, Og].
  const float* group_weights(index g) const { return weights_.data() + g * depth_ * Og_; }

  /// Rows [r0, r1) of group g's patches into `out`, [r1 - r0, depth_]: each row the group's Cg channels at each
  /// tap in (kh, kw) order, zeros where a tap falls in the padding.
  void pack_rows(const float* nhwc, index g, index r0, index r1, float* out) const {
    const index C = c_.in_c, H = c_.in_h, W = c_.in_w, K = c_.kernel, D = c_.dilation, Cg = Cg_;
    const index OH = c_.out_h, OW = c_.out_w;
    for (index r = r0; r < r1; ++r) {
      const index n = r / (OH * OW), oh = r / OW % OH, ow = r % OW;
      const index ih0 = oh * c_.stride - c_.padding, iw0 = ow * c_.stride - c_.padding;
      const float* image = nhwc + n * H * W * C + g * Cg;
      for (index kh = 0; kh < K; ++kh) {
        const index ih = ih0 + kh * D;
        for (index kw = 0; kw < K; ++kw, out += Cg) {
          const index iw = iw0 + kw * D;
          if (ih < 0 || ih >= H || iw < 0 || iw >= W)
            std::fill(out, out + Cg, 0.0f);
          else
            std::copy_n(image + (ih * W + iw) * C, Cg, out);
        }
      }
    }
  }

  /// Calls f(i, j) for each weight: i its index in PyTorch's [O, Cg, K, K], j in the groups' HWIO matrices (output
  /// channel g * Og + o's (c, k) weight is group g's row k * Cg + c, column o).
  template <class F>
  void for_each_weight(F&& f) const {
    const index KK = index(c_.kernel) * c_.kernel;
    for (index g = 0; g < G_; ++g)
      for (index o = 0; o < Og_; ++o)
        for (index ch = 0; ch < Cg_; ++ch)
          for (index k = 0; k < KK; ++k) f(((g * Og_ + o) * Cg_ + ch) * KK + k, (g * depth_ + k * Cg_ + ch) * Og_ + o);
  }
  /// weights_ from the PyTorch-layout parameters.
  void to_group_hwio() {
    for_each_weight([&](index i, index j) { weights_.data()[j] = p_.weights[i]; });
  }

  /// Group g's P_g^T dZ_g ([depth_, Og]) for each group, over (group, share of the rows) pairs; the shares'
  /// partials are added, then laid out as PyTorch's [O, Cg, K, K].
  void weights_gradient(const device& dev, const float* x, const float* dz) {
    const index O = c_.out_c, size = depth_ * Og_;
    const auto partial = [&](index g, index s) {
      return s == 0 ? diff_weights_.data() + g * size : partials_.data() + ((s - 1) * G_ + g) * size;
    };
    on_pool(dev, G_ * shares_, [&](index t) {
      const index g = t % G_, s = t / G_;
      const index r0 = rows_ * s / shares_, r1 = rows_ * (s + 1) / shares_;
      float* packed = packs_.data() + slot(dev) * block_ * depth_;
      float* dw = partial(g, s);
      if (r0 == r1) std::fill(dw, dw + size, 0.0f);
      for (index b = r0; b < r1; b += block_) {
        const index e = std::min(r1, b + block_);
        pack_rows(x, g, b, e, packed);
        gemm(depth_, Og_, e - b, transposed({packed, depth_}), {dz + b * O + g * Og_, O}, dw, Og_, 1.0f,
             b == r0 ? 0.0f : 1.0f);
      }
    });
    for (index s = 1; s < shares_; ++s)
      for (index g = 0; g < G_; ++g) simd::add(partial(g, 0), partial(g, s), partial(g, 0), std::size_t(size));
    for_each_weight([&](index i, index j) { p_.diff_weights[i] = diff_weights_.data()[j]; });
  }

  /// dX: for each (group, image) pair, dP = dZ_g W_g^T block by block, each block's patches added into the
  /// image's channels of the group (col2im); the pair is the only writer of those floats.
  void data_gradient(const device& dev, const float* dz) {
    const index C = c_.in_c, H = c_.in_h, W = c_.in_w, K = c_.kernel, D = c_.dilation, Cg = Cg_, O = c_.out_c;
    const index OH = c_.out_h, OW = c_.out_w, pixels = OH * OW;
    on_pool(dev, G_ * c_.batch, [&](index t) {
      const index g = t % G_, n = t / G_;
      float* image = diff_src_.data() + n * H * W * C + g * Cg;
      for (index p = 0; p < H * W; ++p) std::fill(image + p * C, image + p * C + Cg, 0.0f);
      float* dp = packs_.data() + slot(dev) * block_ * depth_;
      for (index b = 0; b < pixels; b += block_) {
        const index e = std::min(pixels, b + block_), r0 = n * pixels + b;
        gemm(e - b, depth_, Og_, {dz + r0 * O + g * Og_, O}, transposed({group_weights(g), Og_}), dp, depth_);
        for (index q = b; q < e; ++q) {
          const index ih0 = q / OW * c_.stride - c_.padding, iw0 = q % OW * c_.stride - c_.padding;
          const float* row = dp + (q - b) * depth_;
          for (index kh = 0; kh < K; ++kh) {
            const index ih = ih0 + kh * D;
            if (ih < 0 || ih >= H) continue;
            for (index kw = 0; kw < K; ++kw) {
              const index iw = iw0 + kw * D;
              if (iw >= 0 && iw < W) simd::add(image + (ih * W + iw) * C, row + (kh * K + kw) * Cg,
                                               image + (ih * W + iw) * C, std::size_t(Cg));
            }
          }
        }
      }
    });
  }

  /// Rows of one block: at most kBlockRows, and at most kBlockFloats packed floats (as conv2d.hpp's blocks).
  static constexpr index kBlockRows = 512;
  static constexpr index kBlockFloats = index(1) << 20;

  index G_ = 1, Cg_ = 0, Og_ = 0, depth_ = 0, block_ = 1, shares_ = 1;
  AlignedBuffer<float> weights_, diff_weights_, partials_, packs_;
};

}  // namespace sinew::backend::eigen
