// sinew/backend/eigen/conv2d.hpp: Conv2d (+ fused activation) as TensorFlow's SpatialConvolution computes it.
//
// Forward: the NHWC input's patches, rows of the [N*OH*OW, K*K*C] matrix P, multiplied by the weights as a
// [K*K*C, O] matrix (HWIO: PyTorch's OIHW weights are shuffled into it each step, a few KiB), then bias and
// activation in one pass. Like TensorFlow's SpatialConvolution, which packs patches as its contraction reads
// them, each pool thread packs a block of at most kBlockRows rows of P (one memcpy per kernel row, see
// pack_patches) and multiplies it at once, while it is in the core's cache; P as a whole is never read back
// in the forward, only kept for the backward's P^T dZ. A 1x1 convolution with stride 1 and no padding packs
// nothing: its NHWC input is P, multiplied in place (ResNet-50's bottlenecks have three of them in each block).
// The matrix kernel is oneDNN's sgemm (gemm.hpp), as in TensorFlow's x86 builds, one single-threaded call per
// block on the pool thread that packed it. On one Zen 4 core it runs ResNet-18's [rows, K*K*C] x [K*K*C, O]
// products at 95-110 GFLOP/s (Eigen 3.4's own gebp kernel, used here before, at 0.70-0.75x of that; both
// measured on a shared, loaded machine).
// What remains between this forward and oneDNN's is the algorithm, not the kernel: P multiplies the zeros of
// the padding, which oneDNN's direct convolution skips (ResNet-18's 3x3 layers at 4x4 pixels: 31% of the
// products are zeros, at 8x8 16%), and writing P for the backward costs memory bandwidth.
// Backward weights: P^T dZ (TensorFlow's SpatialConvolutionBackwardKernel is the same contraction), each pool
// thread its share of P's rows into a partial sum of its own (P is read once), the partials added, shuffled
// back to OIHW; bias: dZ summed over rows. Backward data: dP = dZ W^T in the forward's blocks of rows, then
// col2im. TensorFlow instead convolves the stride-inflated, padded output gradient with the flipped
// kernel; col2im does the same sums without the S^2 zeros of the inflated gradient, for any padding, and dP
// reuses P's buffer (P is spent once the weight gradient is computed), so backward data costs no memory of
// its own.
// All dimensions are runtime values: the op compiles once per translation unit whatever the network.
#pragma once

#include "sinew/backend/eigen/common.hpp"
#include "sinew/backend/eigen/gemm.hpp"
#include "sinew/backend/generic/probe.hpp"

namespace sinew::backend::eigen {

class conv2d_op : public op_base<diff_dst_use::always> {
 public:
  using config = Conv2dConfig;

  template <NodeType N>
  void setup(context& ctx, const tensor_desc& src_desc, int batch, ParamSlots p, bool need_diff_src) {
    setup(ctx, src_desc, conv2d_config<N>(batch), p, need_diff_src);
  }

  void setup(context& ctx, const tensor_desc& src_desc, const config& c, ParamSlots p, bool need_diff_src) {
    c_ = c;
    p_ = p;
    if (!c.bias) p_.bias = p_.diff_bias = nullptr;
    need_diff_src_ = need_diff_src;
    rows_ = index(c.batch) * c.out_h * c.out_w;
    depth_ = index(c.kernel) * c.kernel * c.in_c;
    const tensor_desc in = make_desc(c.batch, c.in_c, c.in_h, c.in_w, layout::nhwc);
    src_.setup(ctx, src_desc, in);
    dst_.allocate(make_desc(c.batch, c.out_c, c.out_h, c.out_w, layout::nhwc));
    // A pointwise convolution's P is its input; the buffer then only holds the backward's dP.
    if (!is_pointwise() || need_diff_src) patches_ = AlignedBuffer<float>(std::size_t(rows_ * depth_));
    weights_ = AlignedBuffer<float>(std::size_t(depth_) * c.out_c);
    diff_weights_ = AlignedBuffer<float>(std::size_t(depth_) * c.out_c);
    // The weights gradient's partial sums of every thread but the first (see weights_gradient).
    partials_ = AlignedBuffer<float>(std::size_t(std::max(ctx.threads() - 1, 0)) * depth_ * c.out_c);
    act_.setup(c.act, dst_.desc().size());
    if (need_diff_src) diff_src_.allocate(in);
  }

  void forward(context& ctx, const tensor& src) { forward(ctx, src, metrics::no_probe); }
  void backward(context& ctx, const tensor& src, const tensor& diff_dst) {
    backward(ctx, src, diff_dst, metrics::no_probe);
  }

  /// The probe sees the convolution, then the activation's pass (which also adds the bias; without an
  /// activation the bias add counts toward the convolution). See metrics/profile.hpp.
  template <class Probe>
  void forward(context& ctx, const tensor& src, Probe& probe) {
    const device& dev = ctx.dev();
    probe.begin(metrics::OpKind::convolution);
    const float* nhwc = src_(ctx, src).data;
    // OIHW -> HWIO: [K*K*C, O], rows in the (kh, kw, c) order of a patch.
    const const_image w(p_.weights, c_.out_c, c_.in_c, c_.kernel, c_.kernel);
    image(weights_.data(), c_.kernel, c_.kernel, c_.in_c, c_.out_c).device(dev) =
        w.shuffle(std::array<index, 4>{2, 3, 1, 0});
    // Each thread packs a block of patch rows and multiplies it by the weights while the block is in its
    // cache, as TensorFlow's SpatialConvolution packs patches as its contraction reads them. The blocks
    // stay in P for the backward's P^T dZ.
    const index O = c_.out_c, block = block_rows(dev), blocks = (rows_ + block - 1) / block;
    rows_of_p_ = is_pointwise() ? nhwc : cpatches();
    on_pool(dev, blocks, [&](index b) {
      const index r0 = b * block, n = std::min(rows_, r0 + block) - r0;
      if (!is_pointwise()) pack_patches(nhwc, r0, r0 + n);
      gemm(n, O, depth_, {rows_of_p_ + r0 * depth_, depth_}, {cweights(), O}, dst_.data() + r0 * O, O);
    });
    patches_valid_ = true;
    if (act_.active()) probe.begin(activation_kind(c_.act, metrics::Direction::forward));
    bias_activation(dev, dst_.data(), p_.bias, rows_, c_.out_c, c_.act);
  }

  /// `src` must be the tensor of the last forward(). The probe sees the activation's backward, backward
  /// weights (with bias) and backward data apart.
  template <class Probe>
  void backward(context& ctx, const tensor& src, const tensor& diff_dst, Probe& probe) {
    const device& dev = ctx.dev();
    if (act_.active()) probe.begin(activation_kind(c_.act, metrics::Direction::backward));
    const float* dz = act_.backward(dev, dst_.data(), diff_dst_(ctx, diff_dst).data);
    const auto dz_m = as_matrix(dz, rows_, c_.out_c);
    probe.begin(metrics::OpKind::convolution_backward_weights);
    if (!patches_valid_) {  // a second backward after one forward
      const float* nhwc = src_(ctx, src).data;
      if (!is_pointwise()) extract_patches(dev, nhwc);
      rows_of_p_ = is_pointwise() ? nhwc : cpatches();
    }
    weights_gradient(dev, dz);
    // HWIO -> OIHW, into the flat gradient buffer.
    image(p_.diff_weights, c_.out_c, c_.in_c, c_.kernel, c_.kernel).device(dev) =
        const_image(diff_weights_.data(), c_.kernel, c_.kernel, c_.in_c, c_.out_c).shuffle(std::array<index, 4>{3, 2, 0, 1});
    if (p_.diff_bias)
      ::Eigen::TensorMap<::Eigen::Tensor<float, 1, ::Eigen::RowMajor, index>>(p_.diff_bias, c_.out_c).device(dev) =
          dz_m.sum(std::array<index, 1>{0});
    if (!need_diff_src_) return;
    probe.begin(metrics::OpKind::convolution_backward_data);
    // dP = dZ W^T in the forward's blocks of rows, which the pool's threads take as they come (a thread that
    // another process slows takes fewer); P is spent, so dP takes its buffer.
    const index O = c_.out_c, block = block_rows(dev), blocks = (rows_ + block - 1) / block;
    on_pool(dev, blocks, [&](index b) {
      const index r0 = b * block, n = std::min(rows_, r0 + block) - r0;
      gemm(n, depth_, O, {dz + r0 * O, O}, transposed({cweights(), O}), patches_.data() + r0 * depth_, depth_);
    });
    patches_valid_ = false;
    col2im(dev);
  }

 private:
  const float* cweights() const noexcept { return weights_.data(); }
  /// P, read-only.
  const float* cpatches() const noexcept { return patches_.data(); }
  /// Whether P is the NHWC input itself: a 1x1 kernel at stride 1 without padding.
  bool is_pointwise() const noexcept { return c_.kernel == 1 && c_.stride == 1 && c_.padding == 0; }

  /// P = the input's K x K patches, one row per output pixel, in the (kh, kw, c) order of the HWIO weights.
  /// In NHWC the K*C floats of one kernel row (kh) lie contiguous in the input wherever the window is inside
  /// it, so each is one memcpy, and the padding around it is zeros. (Eigen's extract_image_patches computes
  /// every float's source index on its own, and with fewer channels than a SIMD packet it cannot vectorise:
  /// 36 ms of LeNet-5's 3->6 forward convolution at batch 42 went there, against oneDNN's 0.8 ms.)
  void extract_patches(const device& dev, const float* nhwc) {
    // (Not called for a pointwise convolution, whose P is its input.)
    parallel_for(dev, rows_, double(depth_), [&](index begin, index end) { pack_patches(nhwc, begin, end); });
    patches_valid_ = true;
  }

  /// Rows [begin, end) of P, on the calling thread.
  void pack_patches(const float* nhwc, index begin, index end) {
    const index C = c_.in_c, H = c_.in_h, W = c_.in_w, K = c_.kernel, S = c_.stride, pad = c_.padding;
    const index OW = c_.out_w, pixels = index(c_.out_h) * OW, depth = depth_, span = K * C;
    float* const patches = patches_.data();
    for (index r = begin; r < end; ++r) {
      const index n = r / pixels, oh = r % pixels / OW, ow = r % OW;
      const index iw0 = ow * S - pad;
      // The kernel columns kw in [lo, hi) fall inside the input's width.
      const index lo = std::clamp<index>(-iw0, 0, K), hi = std::clamp<index>(W - iw0, lo, K);
      float* out = patches + r * depth;
      for (index kh = 0; kh < K; ++kh, out += span) {
        const index ih = oh * S - pad + kh;
        if (ih < 0 || ih >= H) {
          std::fill(out, out + span, 0.0f);
          continue;
        }
        std::fill(out, out + lo * C, 0.0f);
        if (hi > lo)
          std::memcpy(out + lo * C, nhwc + ((n * H + ih) * W + iw0 + lo) * C, std::size_t(hi - lo) * C * sizeof(float));
        std::fill(out + hi * C, out + span, 0.0f);
      }
    }
  }

  /// diff_weights_ = P^T dZ ([K*K*C, O]): each thread multiplies its share of P's rows into a partial sum of
  /// its own in one call (P, the largest operand, is read once), and the partials are added.
  void weights_gradient(const device& dev, const float* dz) {
    const index O = c_.out_c, size = depth_ * O;
    const auto partial = [&](index share) {
      return share == 0 ? diff_weights_.data() : partials_.data() + (share - 1) * size;
    };
    const index shares = for_shares(dev, rows_, 16, 2.0 * double(rows_) * depth_ * O, [&](index share, index r0, index r1) {
      gemm(depth_, O, r1 - r0, transposed({rows_of_p_ + r0 * depth_, depth_}), {dz + r0 * O, O}, partial(share), O);
    });
    if (shares > 1)
      for_chunks(dev, std::size_t(size), [&](std::size_t b, std::size_t e) {
        float* sum = diff_weights_.data();
        for (index share = 1; share < shares; ++share) {
          const float* add = partial(share);
          simd::transform(b, e, [&](auto v, std::size_t i) {
            using V = decltype(v);
            simd::store(sum + i, simd::load<V>(sum + i) + simd::load<V>(add + i));
          });
        }
      });
  }

  /// Rows of P per block of the forward's pack-and-multiply: at most kBlockRows, and blocks a multiple of the
  /// threads, at least two each, so that they share out evenly. sgemm packs the weights again for every call,
  /// so where a block has fewer rows than the layer has outputs (the weights outweigh the block: VGG-16's last
  /// layers at batch 1, 4 to 64 rows against 512 outputs), each thread takes one block of its share instead.
  index block_rows(const device& dev) const {
    const index threads = dev.numThreads();
    const index blocks = (std::max<index>(2 * threads, (rows_ + kBlockRows - 1) / kBlockRows) + threads - 1) /
                         threads * threads;
    const index block = std::max<index>(48, (rows_ + blocks - 1) / blocks);
    if (block >= c_.out_c) return block;
    return std::max(block, (rows_ + threads - 1) / threads);
  }

  /// The most rows of P in one block of the forward: blocks of 256 to 2048 rows ran ResNet-18's layers at the
  /// same speed within the noise of a shared, loaded Zen 4 (one thread, batch 42); 512 rows of the widest patch
  /// (layer4's 4608 floats) are 9 MiB, of layer1's 576 floats 1.2 MiB (the core's L2 holds 1 MiB).
  static constexpr index kBlockRows = 512;

  /// dX[n, ih, iw, :] = sum of dP[(n, oh, ow), (kh, kw, :)] over the windows that cover (ih, iw).
  void col2im(const device& dev) {
    const int OH = c_.out_h, OW = c_.out_w, K = c_.kernel, C = c_.in_c;
    const float* dp = patches_.data();
    const index depth = depth_;
    window_gather(dev, {c_.batch, c_.in_h, c_.in_w, C, OH, OW, K, c_.stride, c_.padding}, diff_src_.data(), 1.0f,
                  [&](int n, int oh, int ow, int kh, int kw) {
                    return dp + ((index(n) * OH + oh) * OW + ow) * depth + (index(kh) * K + kw) * C;
                  });
  }

  config c_{};
  ParamSlots p_;
  bool patches_valid_ = false;
  /// P's rows as the last forward left them: patches_, or the NHWC input of a pointwise convolution.
  const float* rows_of_p_ = nullptr;
  index rows_ = 0, depth_ = 0;
  converter src_;
  AlignedBuffer<float> patches_, weights_, diff_weights_, partials_;
  fused_activation act_;
};

}  // namespace sinew::backend::eigen

namespace sinew::backend {
template <>
struct op_for<layer_kind::conv2d, Eigen> {
  using type = eigen::conv2d_op;
};
}  // namespace sinew::backend
