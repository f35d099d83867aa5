// sinew/backend/eigen/conv2d.hpp: Conv2d (+ fused activation) as TensorFlow's SpatialConvolution computes it.
//
// Forward: the NHWC input's patches, rows of the [N*OH*OW, K*K*C] matrix P, contracted with the weights as a
// [K*K*C, O] matrix (HWIO: PyTorch's OIHW weights are shuffled into it each step, a few KiB), then bias and
// activation in one pass. Like TensorFlow's SpatialConvolution, which packs patches as its contraction reads
// them, each thread packs a block of at most 256 rows of P (one memcpy per kernel row, see pack_patches) and
// contracts it at once, while it is in the core's cache; P as a whole is never read back in the forward,
// only kept for the backward's P^T dZ. A 1x1 convolution with stride 1 and no padding packs nothing: its
// NHWC input is P, contracted in place (ResNet-50's bottlenecks have three of them in each block).
// What bounds the forward is Eigen's matrix kernel (gebp, 3 x 4 registers of 16 floats): on one Zen 4 core,
// on ResNet-18's [rows, K*K*C] x [K*K*C, O] shapes, it runs at 0.70-0.75x oneDNN's sgemm on the same
// matrices, whether called as a Tensor contraction or a Matrix product, at blocks of 256 to 43008 rows, row-
// or column-major output (measured side by side on a shared, loaded machine); the op itself stays at
// 1.4-2.1x oneDNN's convolution on those layers on one thread.
// TensorFlow's x86 builds run oneDNN's sgemm inside Eigen's contractions by default (its build option
// tensorflow_mkldnn_contraction_kernel=0 brings back gebp); this backend keeps Eigen's own kernel.
// Backward weights: P^T dZ (TensorFlow's SpatialConvolutionBackwardKernel is the same contraction), shuffled
// back to OIHW; bias: dZ summed over rows. Backward data: dP = dZ W^T, then col2im. TensorFlow instead
// convolves the stride-inflated, padded output gradient with the flipped kernel; col2im does the same sums
// without the S^2 zeros of the inflated gradient, for any padding, and dP reuses P's buffer (P is spent once
// the weight gradient is computed), so backward data costs no memory of its own.
// All dimensions are runtime values: the op compiles once per translation unit whatever the network.
#pragma once

#include "sinew/backend/eigen/common.hpp"
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
    // Each thread packs a block of patch rows and contracts it with the weights while the block is in its
    // cache, as TensorFlow's SpatialConvolution packs patches as its contraction reads them. The blocks
    // stay in P for the backward's P^T dZ.
    const index O = c_.out_c, block = block_rows(dev), blocks = (rows_ + block - 1) / block;
    rows_of_p_ = is_pointwise() ? nhwc : cpatches();
    parallel_for(dev, blocks, double(block) * depth_ * (O + 1), [&](index b, index e) {
      for (; b < e; ++b) {
        const index r0 = b * block, n = std::min(rows_, r0 + block) - r0;
        if (!is_pointwise()) pack_patches(nhwc, r0, r0 + n);
        const auto p = as_matrix(rows_of_p_ + r0 * depth_, n, depth_);
        // On this thread (Eigen's default device).
        as_matrix(dst_.data() + r0 * O, n, O) = p.contract(as_matrix(cweights(), depth_, O), contract_dims{pair(1, 0)});
      }
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
    as_matrix(diff_weights_.data(), depth_, c_.out_c).device(dev) =
        as_matrix(rows_of_p_, rows_, depth_).contract(dz_m, contract_dims{pair(0, 0)});
    // HWIO -> OIHW, into the flat gradient buffer.
    image(p_.diff_weights, c_.out_c, c_.in_c, c_.kernel, c_.kernel).device(dev) =
        const_image(diff_weights_.data(), c_.kernel, c_.kernel, c_.in_c, c_.out_c).shuffle(std::array<index, 4>{3, 2, 0, 1});
    if (p_.diff_bias)
      ::Eigen::TensorMap<::Eigen::Tensor<float, 1, ::Eigen::RowMajor, index>>(p_.diff_bias, c_.out_c).device(dev) =
          dz_m.sum(std::array<index, 1>{0});
    if (!need_diff_src_) return;
    probe.begin(metrics::OpKind::convolution_backward_data);
    as_matrix(patches_.data(), rows_, depth_).device(dev) =
        dz_m.contract(as_matrix(cweights(), depth_, c_.out_c), contract_dims{pair(1, 1)});
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

  /// Rows of P per block of the forward's pack-and-contract: at most 256 (a LeNet-5 block is 75 KiB, in
  /// the core's L2 while it is contracted), and small enough for four blocks per thread on large layers.
  /// The contraction packs the weights again for every block, so where a block has fewer rows than the
  /// layer has outputs (the weights outweigh the block: VGG-16's last layers at batch 1, 4 to 64 rows
  /// against 512 outputs), each thread takes one block of its share instead.
  index block_rows(const device& dev) const {
    const index threads = dev.numThreads();
    const index block = std::clamp<index>((rows_ + 4 * threads - 1) / (4 * threads), 48, 256);
    if (block >= c_.out_c) return block;
    return std::max(block, (rows_ + threads - 1) / threads);
  }

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
  AlignedBuffer<float> patches_, weights_, diff_weights_;
  fused_activation act_;
};

}  // namespace sinew::backend::eigen

namespace sinew::backend {
template <>
struct op_for<layer_kind::conv2d, Eigen> {
  using type = eigen::conv2d_op;
};
}  // namespace sinew::backend
