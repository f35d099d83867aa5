// sinew/backend/eigen/batch_norm.hpp: BatchNorm2d (+ fused activation) as TensorFlow's FusedBatchNorm
// computes it on CPUs: the NHWC activation seen as a [N*H*W, C] matrix, per-channel reductions over its rows
// (`sum` over dimension 0, which Eigen vectorises across the contiguous channels) and the normalisation as
// one broadcast expression. A flat input (C x 1 x 1) is the same [N, C] matrix: BatchNorm1d.
//
// Training normalises with the batch mean and biased variance (two passes, centred, as oneDNN) and updates
// the running statistics in the Model's buffer array with PyTorch's momentum and unbiased variance;
// evaluation normalises with the running statistics. Backward differentiates the mode of the last forward:
//   dgamma = sum(dz * xhat), dbeta = sum(dz),
//   training: dx = gamma / sigma * (dz - dbeta / M - xhat * dgamma / M), evaluation: dx = gamma / sigma * dz,
// with M = N*H*W and dz the gradient before the fused activation (computed from the output, as conv2d's).
#pragma once

#include <cmath>
#include <string>

#include "sinew/backend/eigen/common.hpp"

namespace sinew::backend::eigen {

class batch_norm_op : public op_base<diff_dst_use::always> {
  // Expression helpers first: member functions returning auto must be defined before their use.
  using vector = ::Eigen::TensorMap<::Eigen::Tensor<float, 1, ::Eigen::RowMajor, index>>;
  using const_vector = ::Eigen::TensorMap<::Eigen::Tensor<const float, 1, ::Eigen::RowMajor, index>>;
  static constexpr std::array<index, 1> kRows{0};

  vector vec(float* p) const { return vector(p, c_.channels); }
  const_vector vec(const float* p) const { return const_vector(p, c_.channels); }
  /// A per-channel vector repeated over the rows: [C] -> [1, C] -> [M, C].
  auto broadcast(const float* p) const {
    return vec(p).reshape(std::array<index, 2>{1, c_.channels}).broadcast(std::array<index, 2>{rows_, 1});
  }

 public:
  using config = BatchNormConfig;

  template <NodeType N>
  void setup(context& ctx, const tensor_desc& src_desc, int batch, ParamSlots p, bool need_diff_src) {
    setup(ctx, src_desc, batch_norm_config<N>(batch), p, need_diff_src);
  }

  void setup(context& ctx, const tensor_desc& src_desc, const config& c, ParamSlots p, bool need_diff_src) {
    c_ = c;
    p_ = p;
    need_diff_src_ = need_diff_src;
    rows_ = index(c.batch) * c.h * c.w;
    const tensor_desc in = make_desc(c.batch, c.channels, c.h, c.w, layout::nhwc);
    src_.setup(ctx, src_desc, in);
    dst_.allocate(in);
    if (need_diff_src) diff_src_.allocate(in);
    const auto C = std::size_t(c.channels);
    mean_ = AlignedBuffer<float>(C);
    variance_ = AlignedBuffer<float>(C);
    mean_dz_ = AlignedBuffer<float>(C);
    centred_factor_ = AlignedBuffer<float>(C);
    scale_ = AlignedBuffer<float>(C);
    inv_std_ = AlignedBuffer<float>(C);
    act_.setup(c.act, in.size());
  }

  void set_mode(const ForwardMode& m) noexcept { training_ = m.training; }

  void forward(context& ctx, const tensor& src) {
    const device& dev = ctx.dev();
    last_training_ = training_;
    if (training_) BatchNorm2d::require_batch_statistics(std::size_t(rows_));
    x_ = src_(ctx, src).data;
    const auto X = as_matrix(x_, rows_, c_.channels);
    if (training_) {
      const float inv_rows = 1.0f / float(rows_);
      vec(mean_.data()).device(dev) = X.sum(kRows) * inv_rows;
      vec(variance_.data()).device(dev) = (X - broadcast(mean_.data())).square().sum(kRows) * inv_rows;
      used_mean_ = mean_.data();
      used_variance_ = variance_.data();
    } else {
      used_mean_ = p_.buffers;
      used_variance_ = p_.buffers + c_.channels;
    }
    for (int ch = 0; ch < c_.channels; ++ch) {
      inv_std_[ch] = 1.0f / std::sqrt(used_variance_[ch] + c_.eps);
      scale_[ch] = p_.weights[ch] * inv_std_[ch];
    }
    as_matrix(dst_.data(), rows_, c_.channels).device(dev) =
        (X - broadcast(used_mean_)) * broadcast(scale_.data()) + broadcast(p_.bias);
    activation_forward(dev, c_.act, dst_.data(), dst_.data(), dst_.desc().size());
    if (training_) update_running_statistics();
  }

  /// `src` must be the tensor of the last forward(); differentiates the mode that forward ran in.
  void backward(context& ctx, const tensor&, const tensor& diff_dst) {
    const device& dev = ctx.dev();
    const float* dz = act_.backward(dev, dst_.data(), diff_dst_(ctx, diff_dst).data);
    const auto DZ = as_matrix(dz, rows_, c_.channels);
    const auto X = as_matrix(x_, rows_, c_.channels);
    vec(p_.diff_bias).device(dev) = DZ.sum(kRows);
    vec(p_.diff_weights).device(dev) =
        (DZ * (X - broadcast(used_mean_))).sum(kRows) * vec(static_cast<const float*>(inv_std_.data()));
    if (!need_diff_src_) return;
    auto DX = as_matrix(diff_src_.data(), rows_, c_.channels);
    if (!last_training_) {
      DX.device(dev) = DZ * broadcast(scale_.data());
      return;
    }
    // dx = scale (dz - dbeta / M) - (x - mean) scale / sigma dgamma / M, with both per-channel terms
    // computed once.
    const float inv_rows = 1.0f / float(rows_);
    for (int ch = 0; ch < c_.channels; ++ch) {
      mean_dz_[ch] = p_.diff_bias[ch] * inv_rows;
      centred_factor_[ch] = scale_[ch] * inv_std_[ch] * p_.diff_weights[ch] * inv_rows;
    }
    DX.device(dev) = (DZ - broadcast(mean_dz_.data())) * broadcast(scale_.data()) -
                     (X - broadcast(used_mean_)) * broadcast(centred_factor_.data());
  }

 private:
  void update_running_statistics() {
    BatchNorm2d::update_running_statistics({p_.buffers, 2 * std::size_t(c_.channels)}, mean_.data(),
                                           variance_.data(), std::size_t(rows_));
  }

  config c_{};
  ParamSlots p_;
  bool training_ = true, last_training_ = true;
  index rows_ = 0;
  const float* x_ = nullptr;  ///< the NHWC input of the last forward
  const float* used_mean_ = nullptr;
  const float* used_variance_ = nullptr;
  converter src_;
  AlignedBuffer<float> mean_, variance_, scale_, inv_std_, mean_dz_, centred_factor_;
  fused_activation act_;
};

}  // namespace sinew::backend::eigen

namespace sinew::backend {
template <>
struct op_for<layer_kind::batch_norm, Eigen> {
  using type = eigen::batch_norm_op;
};
}  // namespace sinew::backend
