// sinew/backend/onednn/thin_conv2d.hpp: a stride-1 Conv2d with at most 16 input and 16 output channels (LeNet-5's
// 3->6 and 6->16), with its activation, on sinew's own kernels (backend/simd/thin_conv2d.hpp) instead of oneDNN.
//
// oneDNN 2.6 blocks channels by 16 and vectorises over them, so a 3->6 convolution fills vectors with padding:
// LeNet-5's first layer ran at a fraction of peak, and the two thin convolutions took most of its step
// (figures: bench/README.md, "Why the kernels are as they are"). Here the pixels are the vector
// dimension, so every lane does work whatever the channel count. Where the output channels fill whole vectors
// (6->16 under AVX-512, 16 or 8 under AVX2) with a 3x3 or 5x5 kernel, the forward and the weights' gradient
// vectorise over the output channels instead (the channel kernels of simd/thin_conv2d.hpp), so no lane computes
// a dropped column; the input gradient stays on the pixel tiles.
//
// Each thread takes a contiguous share of the batch and runs whole images: pad the image into its scratch, run
// the tiles, copy the rows out and apply the activation while the image is in cache (one fork and join for the
// convolution and its activation, where the oneDNN path had a primitive, a reorder and an activation pass). The
// padded images stay for backward, which runs two passes: the weights' gradient, each thread summing its images
// (in groups that stay in L2, one horizontal addition per accumulator and group) into partial sums added at the
// end, and the input gradient, the transposed contraction whose rows are the taps, each row added into the padded
// image's gradient at its tap's offset. Those rows run in (ky, kx, channel) order, so the rows of one tile add
// into planes apart rather than one float apart (data_taps_), which is faster on LeNet-5's second layer.
// The op is chosen at compile time from the node's shape (conv2d.hpp's
// conv2d_op_for), never by net name.
//
// The same op runs a PooledConv node (layers/detail/pooled_conv.hpp: the convolution, its activation and a
// non-overlapping average pool; pooled_conv.hpp maps it here where the convolution is thin): each image's output
// is pooled as soon as it is written, and the pool's gradient is spread inside the pass that applies the
// activation's backward, so the pool adds no pass over the batch (and no fork and join) either way. The
// convolution's output stays in the op, in the tiles' padded rows (no copy out; the activation and its backward
// run over whole planes); the node's output is the pool's.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "sinew/backend/generic/node_config.hpp"
#include "sinew/backend/generic/probe.hpp"
#include "sinew/backend/onednn/common.hpp"
#include "sinew/backend/simd/thin_conv2d.hpp"
#include "sinew/backend/simd/avg_pool.hpp"
#include "sinew/core/elementwise.hpp"
#include "sinew/layers/detail/pooled_conv.hpp"
#include "sinew/metrics/profile.hpp"
#include "sinew/tensor/buffer.hpp"

namespace sinew::backend::onednn {

/// Whether a convolution runs on thin_conv2d_op: stride 1 and at most 16 channels on each side (where oneDNN's
/// channel blocking leaves most of each vector empty). conv2d.hpp asks this after small_conv2d_op's test.
constexpr bool conv_is_thin(int in_c, int out_c, int stride) noexcept {
  return stride == 1 && in_c <= 16 && out_c <= 16;
}

/// The op of a thin convolution (see the file comment); Arch is the xsimd architecture of its kernels (the tests
/// also run xsimd::avx2 on an AVX-512 machine).
template <class Arch = simd::thin_conv::default_arch>
class basic_thin_conv2d_op : public own_kernel_op_base {
 public:
  /// A Conv2d node, or a PooledConv node: its convolution, pooled by its pool's kernel.
  template <NodeType N>
  void setup(context& ctx, const desc& src_md, int batch, ParamSlots p, bool need_diff_src) {
    if constexpr (std::is_same_v<typename N::layer::kind, layer_kind::pooled_conv>) {
      using parts = typename N::layer::template nodes<typename N::input, typename N::activation>;
      setup(ctx, src_md, conv2d_config<typename parts::conv_node>(batch), p, need_diff_src, N::layer::pool::kKernel);
    } else {
      setup(ctx, src_md, conv2d_config<N>(batch), p, need_diff_src);
    }
  }

  /// Sets up for configuration `c` (stride 1) reading `src_md`; `p` the layer's slots in the flat buffers. With
  /// `pool` > 1 the output is the average over non-overlapping pool x pool windows of the convolution's.
  void setup(context& ctx, const desc& src_md, const Conv2dConfig& c, ParamSlots p, bool need_diff_src,
             int pool = 1) {
    if (c.stride != 1)
      throw backend_error("thin_conv2d_op: stride " + std::to_string(c.stride) +
                          " given; it computes stride-1 convolutions only (conv_is_thin chooses it)");
    c.require_dense("thin_conv2d_op", "conv2d_op_for sends the others to conv2d_op");
    if (pool < 1 || pool > c.out_h || pool > c.out_w)
      throw backend_error("thin_conv2d_op: a pool of " + std::to_string(pool) + " does not fit the convolution's " +
                          std::to_string(c.out_h) + " x " + std::to_string(c.out_w) + " output");
    c_ = c;
    pool_ = pool;
    user_ = p;
    need_diff_src_ = need_diff_src;
    const auto& eng = ctx.engine();
    const int k = c.kernel, kk = k * k;
    threads_ = std::max(1, std::min(ctx.threads(), c.batch));

    // The padded image, row stride wp_, and the output at every position p = oy * wp_ + ox.
    wp_ = c.in_w + 2 * c.padding;
    plane_ = std::size_t(c.in_h + 2 * c.padding) * std::size_t(wp_);
    positions_ = round_up(std::size_t(c.out_h) * std::size_t(wp_));
    ob_ = simd::thin_conv::block_for(c.out_c);
    out_rows_ = (c.out_c + ob_ - 1) / ob_ * ob_;
    taps_ = c.in_c * kk;
    taps_padded_ = (taps_ + width(ob_) - 1) / width(ob_) * width(ob_);  // whole weights tiles (zero offsets)
    rb_ = simd::thin_conv::block_for(taps_);
    tap_rows_ = (taps_ + rb_ - 1) / rb_ * rb_;
    off_.assign(std::size_t(std::max(taps_padded_, tap_rows_)), 0);
    for (int ci = 0; ci < c.in_c; ++ci)
      for (int ky = 0; ky < k; ++ky)
        for (int kx = 0; kx < k; ++kx)
          off_[std::size_t(ci * kk + ky * k + kx)] = std::ptrdiff_t(ci * plane_ + std::size_t(ky * wp_ + kx));
    // The input gradient's rows in (ky, kx, ci) order: see data_taps_.
    data_taps_.assign(std::size_t(tap_rows_), -1);
    data_off_.assign(std::size_t(tap_rows_), 0);
    for (int ky = 0, r = 0; ky < k; ++ky)
      for (int kx = 0; kx < k; ++kx)
        for (int ci = 0; ci < c.in_c; ++ci, ++r) {
          data_taps_[std::size_t(r)] = ci * kk + ky * k + kx;
          data_off_[std::size_t(r)] = off_[std::size_t(ci * kk + ky * k + kx)];
        }
    // Every tap reads (and data_tiles writes) up to its offset + positions_; a little more for the vector tails.
    image_floats_ = round_up(std::size_t(c.in_c) * plane_ + positions_ + std::size_t(k * wp_ + k) + kVector);
    dz_floats_ = std::size_t(out_rows_) * positions_;
    images_ = zeroed(std::size_t(c.batch) * image_floats_);
    dz_ = zeroed(std::size_t(c.batch) * dz_floats_);
    group_ = int(std::max<std::size_t>(1, kGroupBytes / (sizeof(float) * (image_floats_ + dz_floats_))));
    // Output channels that fill one or two vectors exactly, with a 3x3 or 5x5 kernel: the channel-vectorised
    // forward and weights' gradient (simd/thin_conv2d.hpp); the input gradient stays on the wide tiles.
    channel_vectors_ = c.out_c % int(kVector) == 0 && c.out_c / int(kVector) <= 2 && (k == 3 || k == 5)
                           ? c.out_c / int(kVector) : 0;
    const std::size_t pixels = std::size_t(c.out_h) * std::size_t(c.out_w);
    if (channel_vectors_) w_channels_ = AlignedBuffer<float>(std::size_t(taps_) * std::size_t(c.out_c));
    w_pack_ = AlignedBuffer<float>(std::size_t(out_rows_) * std::size_t(taps_));
    w_data_ = zeroed(std::size_t(c.out_c) * std::size_t(tap_rows_));
    bias_ = zeroed(std::size_t(out_rows_));

    scratch_.clear();
    scratch_.resize(std::size_t(threads_));
    for (auto& s : scratch_) {
      s.out = zeroed(std::size_t(out_rows_) * positions_);
      s.dw = zeroed(std::size_t(out_rows_) * std::size_t(taps_padded_));
      s.db = zeroed(std::size_t(out_rows_));
      if (need_diff_src) s.dx = zeroed(image_floats_);
      if (channel_vectors_) {
        s.pixels = AlignedBuffer<float>(pixels * std::size_t(c.out_c));
        s.sums = AlignedBuffer<float>(std::size_t(taps_) * std::size_t(c.out_c));
      }
    }

    const desc plain_src = plain_desc(c.batch, c.in_c, c.in_h, c.in_w);
    src_.setup(ctx, src_md, plain_src);
    // Under a pool the convolution's output stays in the op, in the tiles' rows (plane n * out_rows_ + o of
    // positions_ floats, row stride wp_): the forward writes it without a copy, and the output gradient's passes run
    // over whole planes in dz's layout. Columns past out_w hold values no window reads (and no gradient reaches);
    // the channel kernels' copy leaves them zero.
    wide_floats_ = pool_ > 1 ? std::size_t(out_rows_) * positions_ : 0;
    wide_ = pool_ > 1 ? zeroed(std::size_t(c.batch) * wide_floats_) : AlignedBuffer<float>();
    dst_ = memory(plain_desc(c.batch, c.out_c, c.out_h / pool_, c.out_w / pool_), eng);
    if (need_diff_src) diff_src_ = memory(plain_src, eng);
  }

  void forward(context& ctx, const memory& src) { forward(ctx, src, metrics::no_probe); }
  void backward(context& ctx, const memory& src, const memory& diff_dst) {
    backward(ctx, src, diff_dst, metrics::no_probe);
  }

  /// The convolution, its activation and the pool in one pass. A profiled run (a probe with kEnabled) applies the
  /// activation and the pool in passes of their own, reported as their kinds as on the oneDNN path (where ReLU and
  /// ReLU6 are post-ops inside the convolution, the others a pass of their own: fused_activation::separate_pass).
  template <class Probe>
  void forward(context& ctx, const memory& src, Probe& probe) {
    constexpr bool profiled = std::remove_cvref_t<Probe>::kEnabled;
    const bool split = profiled && c_.act != simd::activation::none && !fused_activation::post_op(c_.act);
    probe.begin(metrics::OpKind::convolution);
    src_.run(ctx, src);
    const float* x = static_cast<const float*>(src_.target_for(src).get_data_handle());
    float* y = static_cast<float*>(dst_.get_data_handle());
    if (weights_cache_.take()) pack_forward_weights();
    for_images([&](scratch& s, int begin, int end) {
      for (int n = begin; n < end; ++n) {
        forward_image(s, x, y, n, !split);
        if (pool_ > 1 && !profiled) pool_image(y, n);
      }
    });
    if (split) {
      probe.begin(activation_kind(c_.act, metrics::Direction::forward));
      if (pool_ > 1)
        simd::activation_forward(c_.act, wide_.data(), wide_.data(), std::size_t(c_.batch) * wide_floats_);
      else
        simd::activation_forward(c_.act, y, y, dst_.get_desc().get_size() / sizeof(float));
    }
    if (pool_ > 1 && profiled) {
      probe.begin(metrics::OpKind::pooling);
      for_images([&](scratch&, int begin, int end) {
        for (int n = begin; n < end; ++n) pool_image(y, n);
      });
    }
  }

  /// `src` must be the tensor of the last forward() (whose padded images backward reads). The weights' gradient
  /// is profiled as backward weights (the activation's backward too, but in its own pass and kind in a
  /// profiled run), the input gradient as backward data.
  template <class Probe>
  void backward(context& ctx, const memory&, const memory& diff_dst, Probe& probe) {
    constexpr bool split = std::remove_cvref_t<Probe>::kEnabled;
    diff_dst_.run(ctx, diff_dst);
    const float* y = static_cast<const float*>(dst_.get_data_handle());
    const float* dy = static_cast<const float*>(diff_dst_.target_for(diff_dst).get_data_handle());
    if (split) {
      if (pool_ > 1) {  // the pool's backward in a pass of its own
        probe.begin(metrics::OpKind::pooling_backward);
        for_images([&](scratch&, int begin, int end) {
          for (int n = begin; n < end; ++n) spread_image(dy, n);
        });
      }
      if (c_.act != simd::activation::none) probe.begin(activation_kind(c_.act, metrics::Direction::backward));
      for_images([&](scratch& s, int begin, int end) {
        std::fill_n(s.db.data(), s.db.size(), 0.0f);
        for (int n = begin; n < end; ++n) pool_ > 1 ? activate_gradient(s, n) : output_gradient(s, y, dy, n);
      });
    }
    probe.begin(metrics::OpKind::convolution_backward_weights);
    for_images([&](scratch& s, int begin, int end) {
      if (!split) std::fill_n(s.db.data(), s.db.size(), 0.0f);
      weights_images(s, y, dy, begin, end, !split);
    });
    sum_partials();
    if (!need_diff_src_) return;
    probe.begin(metrics::OpKind::convolution_backward_data);
    float* dx = static_cast<float*>(diff_src_.get_data_handle());
    pack_data_weights();
    for_images([&](scratch& s, int begin, int end) {
      for (int n = begin; n < end; ++n) data_image(s, dx, n);
    });
  }

 private:
  static constexpr std::size_t kVector = simd::thin_conv::kWidth<Arch>;
  // The bytes of padded images and output gradients a thread's weights pass sums over at once (within L2).
  static constexpr std::size_t kGroupBytes = std::size_t(384) << 10;
  static constexpr std::size_t round_up(std::size_t n) { return (n + kVector - 1) / kVector * kVector; }
  // The weights tile's width (taps) for a block of `block` rows.
  static constexpr int width(int block) {
    return block == 4 ? simd::thin_conv::kTileWidth<Arch, 4>
                      : block == 6 ? simd::thin_conv::kTileWidth<Arch, 6> : simd::thin_conv::kTileWidth<Arch, 8>;
  }
  static AlignedBuffer<float> zeroed(std::size_t n) {
    AlignedBuffer<float> b(n);
    std::fill_n(b.data(), n, 0.0f);
    return b;
  }

  // One thread's buffers; the zeros outside what each image writes (padding, dropped columns) stay zero.
  struct scratch {
    AlignedBuffer<float> out, dw, db, dx;
    AlignedBuffer<float> pixels, sums;  // the channel-vectorised path's [pixel][channel] rows and [tap][channel] sums
  };

  // Calls f(s, begin, end) on each thread with its scratch and its contiguous share [begin, end) of the batch.
  template <class F>
  void for_images(F&& f) {
    const int batch = c_.batch;
#pragma omp parallel num_threads(threads_)
    {
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
      f(scratch_[std::size_t(t)], int(std::int64_t(batch) * t / nt), int(std::int64_t(batch) * (t + 1) / nt));
    }
  }

  // Calls f with the block size `block` as a compile-time constant.
  template <class F>
  static void with_block(int block, F&& f) {
    if (block == 4)
      f(std::integral_constant<int, 4>{});
    else if (block == 6)
      f(std::integral_constant<int, 6>{});
    else
      f(std::integral_constant<int, 8>{});
  }

  // w_pack_[block][tap][row] = weight[block * ob_ + row][tap] (zero past the channels); bias_ likewise.
  void pack_forward_weights() {
    const float* w = user_.weights;
    float* packed = w_pack_.data();
    for (int b = 0; b < out_rows_ / ob_; ++b)
      for (int t = 0; t < taps_; ++t)
        for (int r = 0; r < ob_; ++r) {
          const int o = b * ob_ + r;
          packed[(std::size_t(b) * std::size_t(taps_) + std::size_t(t)) * std::size_t(ob_) + std::size_t(r)] =
              o < c_.out_c ? w[std::size_t(o) * std::size_t(taps_) + std::size_t(t)] : 0.0f;
        }
    if (c_.bias) std::copy_n(user_.bias, c_.out_c, bias_.data());
    if (channel_vectors_)  // w_channels_[tap][o] = weight[o][tap]
      for (int o = 0; o < c_.out_c; ++o)
        for (int t = 0; t < taps_; ++t)
          w_channels_.data()[std::size_t(t) * std::size_t(c_.out_c) + std::size_t(o)] =
              w[std::size_t(o) * std::size_t(taps_) + std::size_t(t)];
  }

  // Calls f with the channel vectors and the kernel size of the channel-vectorised path as compile-time constants.
  template <class F>
  void with_channels(F&& f) const {
    const auto kernel = [&](auto cv) {
      if (c_.kernel == 3)
        f(cv, std::integral_constant<int, 3>{});
      else
        f(cv, std::integral_constant<int, 5>{});
    };
    if (channel_vectors_ == 1)
      kernel(std::integral_constant<int, 1>{});
    else
      kernel(std::integral_constant<int, 2>{});
  }

  // The input gradient's rows are the taps in data_taps_' order: w_data_[block][o][row] = weight[o][tap of row
  // block * rb_ + row] (zero past the taps).
  void pack_data_weights() {
    const float* w = user_.weights;
    float* packed = w_data_.data();
    for (int b = 0; b < tap_rows_ / rb_; ++b)
      for (int o = 0; o < c_.out_c; ++o)
        for (int r = 0; r < rb_; ++r) {
          const int t = data_taps_[std::size_t(b * rb_ + r)];
          packed[(std::size_t(b) * std::size_t(c_.out_c) + std::size_t(o)) * std::size_t(rb_) + std::size_t(r)] =
              t >= 0 ? w[std::size_t(o) * std::size_t(taps_) + std::size_t(t)] : 0.0f;
        }
  }

  float* image(int n) noexcept { return images_.data() + std::size_t(n) * image_floats_; }
  // Image n's convolution output under a pool (see wide_).
  float* wide(int n) noexcept { return wide_.data() + std::size_t(n) * wide_floats_; }

  // Image n's pooled output into the node's output y, on the calling thread (the pooling op's sums in its order).
  void pool_image(float* y, int n) {
    const std::size_t pooled = std::size_t(c_.out_c) * std::size_t(c_.out_h / pool_) * std::size_t(c_.out_w / pool_);
    simd::avg_pool_forward_strided(wide(n), wp_, std::ptrdiff_t(positions_), y + std::size_t(n) * pooled, c_.out_c,
                                   c_.out_h, c_.out_w, pool_);
  }

  // Under a pool: image n's output gradient before the activation's backward, dz(n), spread from the pool's, dy
  // (the pooling op's values: its gradient over K^2; 0 past the last whole window and in the dropped columns).
  void spread_image(const float* dy, int n) {
    const int ph = c_.out_h / pool_, pw = c_.out_w / pool_;
    const float scale = 1.0f / float(pool_ * pool_);
    for (int o = 0; o < c_.out_c; ++o) {
      float* plane = dz(n) + std::size_t(o) * positions_;
      const float* g = dy + (std::size_t(n) * std::size_t(c_.out_c) + std::size_t(o)) * std::size_t(ph * pw);
      for (int oy = 0; oy < c_.out_h; ++oy) {
        float* row = plane + std::size_t(oy) * std::size_t(wp_);
        const float* pooled = g + std::size_t(oy / pool_) * std::size_t(pw);
        int covered = 0;
        if (oy < ph * pool_) {
          covered = pw * pool_;
          if (pool_ == 2) {
#pragma omp simd
            for (int m = 0; m < pw; ++m) row[2 * m] = row[2 * m + 1] = scale * pooled[m];
          } else {
            for (int px = 0; px < pw; ++px) std::fill_n(row + px * pool_, pool_, scale * pooled[px]);
          }
        }
        std::fill(row + covered, row + wp_, 0.0f);
      }
    }
  }

  // Under a pool: dz(n) times the activation's derivative at the output, whole planes at a time, and its sum per
  // channel into the thread's bias gradient.
  void activate_gradient(scratch& s, int n) {
    const std::size_t rows = std::size_t(c_.out_h) * std::size_t(wp_);
    for (int o = 0; o < c_.out_c; ++o) {
      float* plane = dz(n) + std::size_t(o) * positions_;
      if (c_.act != simd::activation::none)
        simd::activation_backward_serial(c_.act, wide(n) + std::size_t(o) * positions_, plane, plane, 0, rows);
      if (c_.bias) s.db.data()[o] += simd::sum(plane, positions_);
    }
  }
  float* dz(int n) noexcept { return dz_.data() + std::size_t(n) * dz_floats_; }

  // Image n's convolution and (where `activate`) its activation: into the node's output y, or under a pool into
  // wide(n) (pool_image pools it).
  void forward_image(scratch& s, const float* x, float* y, int n, bool activate) {
    // The image's channels into the interior of its zero-padded copy, kept for backward.
    const std::size_t hw = std::size_t(c_.in_h) * std::size_t(c_.in_w);
    const float* img = x + std::size_t(n) * std::size_t(c_.in_c) * hw;
    float* padded = image(n);
    for (int ci = 0; ci < c_.in_c; ++ci)
      for (int iy = 0; iy < c_.in_h; ++iy)
        std::memcpy(padded + std::size_t(ci) * plane_ + std::size_t((iy + c_.padding) * wp_ + c_.padding),
                    img + std::size_t(ci) * hw + std::size_t(iy * c_.in_w), sizeof(float) * std::size_t(c_.in_w));
    const std::size_t ohw = std::size_t(c_.out_h) * std::size_t(c_.out_w), oc = std::size_t(c_.out_c);
    float* out = pool_ > 1 ? nullptr : y + std::size_t(n) * oc * ohw;
    if (channel_vectors_) {
      with_channels([&](auto cv, auto) {
        simd::thin_conv::channel_forward_rows<decltype(cv)::value, Arch>(
            w_channels_.data(), bias_.data(), padded, wp_, off_.data(), taps_, c_.out_h, c_.out_w, s.pixels.data());
      });
      const float* pixels = s.pixels.data();
      if (pool_ > 1) {  // [pixel][channel] -> wide rows
        float* wide_out = wide(n);
        for (int oy = 0; oy < c_.out_h; ++oy)
          for (int ox = 0; ox < c_.out_w; ++ox)
            for (std::size_t o = 0; o < oc; ++o)
              wide_out[o * positions_ + std::size_t(oy * wp_ + ox)] = pixels[std::size_t(oy * c_.out_w + ox) * oc + o];
      } else {
        for (std::size_t p = 0; p < ohw; ++p)  // [pixel][channel] -> NCHW
          for (std::size_t o = 0; o < oc; ++o) out[o * ohw + p] = pixels[p * oc + o];
      }
    } else {
      float* tiles = pool_ > 1 ? wide(n) : s.out.data();
      with_block(ob_, [&](auto block) {
        constexpr int OB = decltype(block)::value;
        for (int b = 0; b < out_rows_ / OB; ++b)
          simd::thin_conv::forward_tiles<OB, Arch>(w_pack_.data() + std::size_t(b) * std::size_t(taps_ * OB),
                                                   bias_.data() + b * OB, padded, off_.data(), taps_, positions_,
                                                   tiles + std::size_t(b * OB) * positions_, positions_);
      });
    }
    if (pool_ > 1) {
      if (activate) simd::activation_forward_serial(c_.act, wide(n), wide(n), oc * positions_);
      return;
    }
    if (!channel_vectors_) {
      for (int o = 0; o < c_.out_c; ++o)
        for (int oy = 0; oy < c_.out_h; ++oy)
          std::memcpy(out + std::size_t(o) * ohw + std::size_t(oy * c_.out_w),
                      s.out.data() + std::size_t(o) * positions_ + std::size_t(oy * wp_),
                      sizeof(float) * std::size_t(c_.out_w));
    }
    if (activate) simd::activation_forward_serial(c_.act, out, out, std::size_t(c_.out_c) * ohw);
  }

  // Image n's pre-activation gradient into dz(n), at the output positions (the dropped columns stay zero), and
  // its sum per channel into the thread's bias gradient. Under a pool, dy is the pool's output gradient.
  void output_gradient(scratch& s, const float* y, const float* dy, int n) {
    if (pool_ > 1) {
      spread_image(dy, n);
      activate_gradient(s, n);
      return;
    }
    const std::size_t ohw = std::size_t(c_.out_h) * std::size_t(c_.out_w);
    for (int o = 0; o < c_.out_c; ++o) {
      float* rows = dz(n) + std::size_t(o) * positions_;
      for (int oy = 0; oy < c_.out_h; ++oy) {
        const std::size_t at = (std::size_t(n) * std::size_t(c_.out_c) + std::size_t(o)) * ohw + std::size_t(oy * c_.out_w);
        float* row = rows + std::size_t(oy * wp_);
        if (c_.act == simd::activation::none)
          std::memcpy(row, dy + at, sizeof(float) * std::size_t(c_.out_w));
        else
          simd::activation_backward_serial(c_.act, y + at, dy + at, row, 0, std::size_t(c_.out_w));
      }
      // The bias' gradient: the wide rows' sum (the dropped columns and the rows' tail are zeros).
      if (c_.bias) s.db.data()[o] += simd::sum(rows, positions_);
    }
  }

  // The thread's partial weights' gradient over images [begin, end), their output gradients first where
  // `output_gradients` (else an earlier pass wrote them).
  void weights_images(scratch& s, const float* y, const float* dy, int begin, int end, bool output_gradients) {
    std::fill_n(s.dw.data(), s.dw.size(), 0.0f);
    if (channel_vectors_) {
      weights_images_by_channels(s, y, dy, begin, end, output_gradients);
      return;
    }
    for (int g = begin; g < end; g += group_) {
      const int images = std::min(group_, end - g);
      if (output_gradients)
        for (int n = g; n < g + images; ++n) output_gradient(s, y, dy, n);
      with_block(ob_, [&](auto block) {
        constexpr int OB = decltype(block)::value;
        for (int b = 0; b < out_rows_ / OB; ++b)
          simd::thin_conv::weights_tiles<OB, Arch>(dz(g) + std::size_t(b * OB) * positions_, positions_, dz_floats_,
                                                   image(g), image_floats_, images, off_.data(), taps_padded_,
                                                   positions_, s.dw.data() + std::size_t(b * OB) * std::size_t(taps_padded_),
                                                   std::size_t(taps_padded_));
      });
    }
  }

  // weights_images on the channel-vectorised kernels: per image, its output gradient as [pixel][channel] rows,
  // then each input channel's kernel rows summed into s.sums ([tap][channel]), transposed into s.dw at the end.
  void weights_images_by_channels(scratch& s, const float* y, const float* dy, int begin, int end,
                                  bool output_gradients) {
    const std::size_t oc = std::size_t(c_.out_c);
    std::fill_n(s.sums.data(), s.sums.size(), 0.0f);
    for (int n = begin; n < end; ++n) {
      if (output_gradients) output_gradient(s, y, dy, n);
      const float* d = dz(n);
      for (int oy = 0; oy < c_.out_h; ++oy)  // wide rows -> [pixel][channel]
        for (int ox = 0; ox < c_.out_w; ++ox)
          for (std::size_t o = 0; o < oc; ++o)
            s.pixels.data()[std::size_t(oy * c_.out_w + ox) * oc + o] = d[o * positions_ + std::size_t(oy * wp_ + ox)];
      with_channels([&](auto cv, auto kernel) {
        constexpr int CV = decltype(cv)::value, K = decltype(kernel)::value;
        constexpr int KR = simd::thin_conv::kChannelRows<Arch, CV, K>;
        for (int ci = 0; ci < c_.in_c; ++ci)
          for (int ky = 0; ky < K; ky += KR)
            simd::thin_conv::channel_weights_rows<CV, K, KR, Arch>(
                s.pixels.data(), image(n) + std::size_t(ci) * plane_ + std::size_t(ky * wp_), wp_, c_.out_h, c_.out_w,
                s.sums.data() + std::size_t((ci * K + ky) * K) * oc);
      });
    }
    for (std::size_t o = 0; o < oc; ++o)
      for (int t = 0; t < taps_; ++t)
        s.dw.data()[o * std::size_t(taps_padded_) + std::size_t(t)] = s.sums.data()[std::size_t(t) * oc + o];
  }

  // diff_weights and diff_bias = the sum of the threads' partial sums.
  void sum_partials() {
    for (int o = 0; o < c_.out_c; ++o) {
      float* dw = user_.diff_weights + std::size_t(o) * std::size_t(taps_);
      for (int t = 0; t < taps_; ++t) {
        float sum = 0;
        for (const auto& s : scratch_) sum += s.dw.data()[std::size_t(o) * std::size_t(taps_padded_) + std::size_t(t)];
        dw[t] = sum;
      }
      if (c_.bias) {
        float sum = 0;
        for (const auto& s : scratch_) sum += s.db.data()[o];
        user_.diff_bias[o] = sum;
      }
    }
  }

  // Image n's input gradient from dz(n) (written by the weights pass), through its padded gradient s.dx.
  void data_image(scratch& s, float* dx, int n) {
    std::fill_n(s.dx.data(), std::size_t(c_.in_c) * plane_, 0.0f);
    with_block(rb_, [&](auto block) {
      constexpr int RB = decltype(block)::value;
      for (int b = 0; b < tap_rows_ / RB; ++b)
        simd::thin_conv::data_tiles<RB, Arch>(w_data_.data() + std::size_t(b) * std::size_t(c_.out_c * RB), dz(n),
                                              positions_, c_.out_c, data_off_.data() + b * RB, positions_, s.dx.data());
    });
    const std::size_t hw = std::size_t(c_.in_h) * std::size_t(c_.in_w);
    float* out = dx + std::size_t(n) * std::size_t(c_.in_c) * hw;
    for (int ci = 0; ci < c_.in_c; ++ci)
      for (int iy = 0; iy < c_.in_h; ++iy)
        std::memcpy(out + std::size_t(ci) * hw + std::size_t(iy * c_.in_w),
                    s.dx.data() + std::size_t(ci) * plane_ + std::size_t((iy + c_.padding) * wp_ + c_.padding),
                    sizeof(float) * std::size_t(c_.in_w));
  }

  Conv2dConfig c_{};
  int pool_ = 1;             // the pool's kernel and stride under a PooledConv node; 1: no pool
  std::size_t wide_floats_ = 0;  // one image's planes in wide_
  AlignedBuffer<float> wide_;    // under a pool, the convolution's output (see setup)
  ParamSlots user_;  // the layer's kernel and bias in the flat buffers (PyTorch's layout)
  int threads_ = 1, group_ = 1;
  int wp_ = 0, ob_ = 8, out_rows_ = 0, taps_ = 0, taps_padded_ = 0, rb_ = 8, tap_rows_ = 0;
  int channel_vectors_ = 0;  // output channels in vectors on the channel-vectorised path; 0: the wide tiles
  std::size_t plane_ = 0, positions_ = 0, image_floats_ = 0, dz_floats_ = 0;
  std::vector<std::ptrdiff_t> off_;  // each tap's offset from the output position in the padded image
  // The input gradient's rows: tap (ci, ky, kx) of row r, ordered by (ky, kx) and then ci (-1 past the taps), and
  // their offsets. A tile of rows adds each row's vectors into the image gradient at its offset; in the weights'
  // (ci, ky, kx) order the rows of a tile are taps kx, kx + 1, ... one float apart, so each read of that
  // read-modify-write overlaps the store just before it, which the core cannot forward. Channels' planes are
  // further apart than a tile is wide.
  std::vector<int> data_taps_;
  std::vector<std::ptrdiff_t> data_off_;
  AlignedBuffer<float> images_, dz_;  // the batch's padded images (forward) and output gradients (backward)
  AlignedBuffer<float> w_pack_, w_data_, bias_, w_channels_;
  std::vector<scratch> scratch_;
  converter src_;
};

/// The op of thin convolutions on the widest instruction set the compiler targets.
using thin_conv2d_op = basic_thin_conv2d_op<>;

}  // namespace sinew::backend::onednn
