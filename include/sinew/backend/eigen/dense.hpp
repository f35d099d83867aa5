// sinew/backend/eigen/dense.hpp: Dense (+ fused activation) as three matrix products.
//
// Forward Y = X W^T, backward dW = dZ^T X and dX = dZ W, all on PyTorch's [Out, In] weights in place (no
// shuffle: a flat input has the same memory in either layout), each on gemm.hpp's kernel (oneDNN's sgemm, as
// TensorFlow's x86 builds contract), each pool thread one call on its share: the outputs' columns of Y, the
// rows of dW, the columns of dX (so no thread sums what another writes).
// Below kGemvBatch rows the forward is one matrix-vector product per row instead (Eigen's GEMV on the
// row-major weights, the pool's threads each taking a range of output rows): a general matrix product with a
// single row packs the whole weight matrix for one pass over it (Eigen's contraction, used here before, did so
// on one thread), while the GEMV reads each weight once (figures: bench/README.md, "Why the kernels are as they are").
#pragma once

#include "sinew/backend/eigen/common.hpp"
#include "sinew/backend/eigen/gemm.hpp"
#include "sinew/backend/generic/probe.hpp"

namespace sinew::backend::eigen {

class dense_op : public op_base<diff_dst_use::always> {
 public:
  template <NodeType N>
  void setup(context& ctx, const tensor_desc& src_desc, int batch, ParamSlots p, bool need_diff_src) {
    using L = typename N::layer;
    setup(ctx, src_desc, batch, L::kOutputs, L::kHasBias, activation_of<typename N::activation>(), p, need_diff_src);
  }

  void setup(context&, const tensor_desc& src_desc, int batch, int outputs, bool has_bias, simd::activation act,
             ParamSlots p, bool need_diff_src) {
    if (src_desc.h * src_desc.w != 1)
      throw backend_error("eigen: dense needs a flat input (N x F x 1 x 1), got " + std::to_string(src_desc.c) + " x " +
                          std::to_string(src_desc.h) + " x " + std::to_string(src_desc.w) + "; insert Flatten");
    p_ = p;
    if (!has_bias) p_.bias = p_.diff_bias = nullptr;
    batch_ = batch;
    inputs_ = index(src_desc.c);
    outputs_ = outputs;
    need_diff_src_ = need_diff_src;
    act_kind_ = act;
    dst_.allocate(plain_desc(batch, outputs, 1, 1));
    act_.setup(act, dst_.desc().size());
    if (need_diff_src) diff_src_.allocate(plain_like(src_desc));
  }

  template <class = void>  // instantiated only if used: see common.hpp, "Compile time"
  void forward(context& ctx, const tensor& src) { forward(ctx, src, metrics::no_probe); }
  template <class = void>  // instantiated only if used: see common.hpp, "Compile time"
  void backward(context& ctx, const tensor& src, const tensor& diff_dst) {
    backward(ctx, src, diff_dst, metrics::no_probe);
  }

  /// As Conv2d's: the product, then the activation's pass with the bias add (see metrics/profile.hpp).
  template <class Probe>
  void forward(context& ctx, const tensor& src, Probe& probe) {
    const device& dev = ctx.dev();
    probe.begin(metrics::OpKind::fully_connected);
    const float* x = src.data;
    if (batch_ < kGemvBatch)
      gemv_forward(dev, x);
    else  // Y = X W^T, each thread the columns of its share of the outputs (its rows of W).
      for_shares(dev, outputs_, 16, flops(), [&](index, index o0, index o1) {
        gemm(batch_, o1 - o0, inputs_, {x, inputs_}, transposed({p_.weights + o0 * inputs_, inputs_}),
             dst_.data() + o0, outputs_);
      });
    if (act_.active()) probe.begin(activation_kind(act_kind_, metrics::Direction::forward));
    bias_activation(dev, dst_.data(), p_.bias, batch_, outputs_, act_kind_);
  }

  /// The activation's backward, backward weights (with bias) and backward data apart.
  template <class Probe>
  void backward(context& ctx, const tensor& src, const tensor& diff_dst, Probe& probe) {
    const device& dev = ctx.dev();
    if (act_.active()) probe.begin(activation_kind(act_kind_, metrics::Direction::backward));
    const float* dz = act_.backward(dev, dst_.data(), diff_dst_(ctx, diff_dst).data);
    const auto dz_m = as_matrix(dz, batch_, outputs_);
    probe.begin(metrics::OpKind::fully_connected_backward_weights);
    const float* x = src.data;
    // dW = dZ^T X, each thread its share of dW's rows (the outputs).
    for_shares(dev, outputs_, 16, flops(), [&](index, index o0, index o1) {
      gemm(o1 - o0, inputs_, batch_, transposed({dz + o0, outputs_}), {x, inputs_}, p_.diff_weights + o0 * inputs_,
           inputs_);
    });
    if (p_.diff_bias)
      ::Eigen::TensorMap<::Eigen::Tensor<float, 1, ::Eigen::RowMajor, index>>(p_.diff_bias, outputs_).device(dev) =
          dz_m.sum(std::array<index, 1>{0});
    if (!need_diff_src_) return;
    probe.begin(metrics::OpKind::fully_connected_backward_data);
    // dX = dZ W, each thread its share of dX's columns (the inputs, W's columns).
    for_shares(dev, inputs_, 16, flops(), [&](index, index i0, index i1) {
      gemm(batch_, i1 - i0, outputs_, {dz, outputs_}, {p_.weights + i0, inputs_}, diff_src_.data() + i0, inputs_);
    });
  }

 private:
  /// Batches below this size run the forward as matrix-vector products (see the file comment).
  static constexpr index kGemvBatch = 4;

  /// y[n, :] = W x[n, :] for each row n, the output rows split among the pool's threads in ranges of 16.
  template <class = void>  // instantiated only if used: see common.hpp, "Compile time"
  void gemv_forward(const device& dev, const float* x) {
    using row_major = ::Eigen::Matrix<float, ::Eigen::Dynamic, ::Eigen::Dynamic, ::Eigen::RowMajor>;
    using column = ::Eigen::Matrix<float, ::Eigen::Dynamic, 1>;
    const ::Eigen::Map<const row_major> w(p_.weights, outputs_, inputs_);
    constexpr index kRange = 16;
    const index ranges = (outputs_ + kRange - 1) / kRange;
    parallel_for(dev, ranges, double(kRange) * inputs_ * batch_ * 2, [&](index b, index e) {
      const index o0 = b * kRange, o1 = std::min(outputs_, e * kRange);
      for (index n = 0; n < batch_; ++n) {
        ::Eigen::Map<column> y(dst_.data() + n * outputs_, outputs_);
        y.segment(o0, o1 - o0).noalias() = w.middleRows(o0, o1 - o0) * ::Eigen::Map<const column>(x + n * inputs_, inputs_);
      }
    });
  }

  /// The multiply-adds of one of the three products, as flops.
  double flops() const noexcept { return 2.0 * double(batch_) * double(inputs_) * double(outputs_); }

  ParamSlots p_;
  index batch_ = 0, inputs_ = 0, outputs_ = 0;
  simd::activation act_kind_ = simd::activation::none;
  fused_activation act_;
};

}  // namespace sinew::backend::eigen

namespace sinew::backend {
template <>
struct op_for<layer_kind::dense, Eigen> {
  using type = eigen::dense_op;
};
}  // namespace sinew::backend
