// sinew/backend/eigen/batch_norm.hpp: BatchNorm2d (+ fused activation) as TensorFlow's FusedBatchNorm
// computes it on CPUs: the NHWC activation seen as a [N*H*W, C] matrix, whose rows are split among the pool's
// threads; each thread sums its rows into per-channel partials (the channels of a row are contiguous, so the
// inner loop is one vector FMA per 16 channels), the partials are added once, and a last pass normalises and
// applies the fused activation while the rows are in cache. A flat input (C x 1 x 1) is the same [N, C]
// matrix: BatchNorm1d. (Eigen's `sum` over dimension 0 of a row-major tensor, which this op used before,
// reduced one column at a time, far slower than these loops
// (figures: bench/README.md, "Why the kernels are as they are").)
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
    shift_ = AlignedBuffer<float>(C);
    inv_std_ = AlignedBuffer<float>(C);
    // Four pieces of rows per thread (the pool balances them), each at least 16 rows.
    pieces_ = std::clamp<index>(rows_ / 16, 1, 4 * index(ctx.threads()));
    partials_ = AlignedBuffer<float>(std::size_t(pieces_) * 2 * C);
    act_.setup(c.act, in.size());
  }

  void set_mode(const ForwardMode& m) noexcept { training_ = m.training; }

  template <class = void>  // instantiated only if used: see common.hpp, "Compile time"
  void forward(context& ctx, const tensor& src) {
    const device& dev = ctx.dev();
    last_training_ = training_;
    if (training_) BatchNorm2d::require_batch_statistics(std::size_t(rows_));
    x_ = src_(ctx, src).data;
    const index C = c_.channels;
    if (training_) {
      const float inv_rows = 1.0f / float(rows_);
      column_sums(dev, [&](index r0, index r1, float* sum, float*) {
        for (index r = r0; r < r1; ++r) add_row(sum, x_ + r * C, C);
      });
      for (index ch = 0; ch < C; ++ch) mean_[ch] = partial_total(ch, 0) * inv_rows;
      const float* mean = mean_.data();
      column_sums(dev, [&](index r0, index r1, float* squares, float*) {
        for (index r = r0; r < r1; ++r) {
          const float* __restrict x = x_ + r * C;
          for (index ch = 0; ch < C; ++ch) {
            const float d = x[ch] - mean[ch];
            squares[ch] += d * d;
          }
        }
      });
      for (index ch = 0; ch < C; ++ch) variance_[ch] = partial_total(ch, 0) * inv_rows;
      used_mean_ = mean_.data();
      used_variance_ = variance_.data();
    } else {
      used_mean_ = p_.buffers;
      used_variance_ = p_.buffers + C;
    }
    for (index ch = 0; ch < C; ++ch) {
      inv_std_[ch] = 1.0f / std::sqrt(used_variance_[ch] + c_.eps);
      scale_[ch] = p_.weights[ch] * inv_std_[ch];
      shift_[ch] = p_.bias[ch] - used_mean_[ch] * scale_[ch];
    }
    // y = x * scale + shift, then the activation, one piece of rows at a time.
    const float* scale = scale_.data();
    const float* shift = shift_.data();
    float* const y = dst_.data();
    parallel_for(dev, pieces_, double(piece_rows()) * C * 3, [&](index b, index e) {
      const index r0 = b * piece_rows(), r1 = std::min(rows_, e * piece_rows());
      for (index r = r0; r < r1; ++r) {
        const float* __restrict x = x_ + r * C;
        float* __restrict out = y + r * C;
        for (index ch = 0; ch < C; ++ch) out[ch] = x[ch] * scale[ch] + shift[ch];
      }
      if (r1 > r0) serial_activation_forward(c_.act, y + r0 * C, y + r0 * C, std::size_t((r1 - r0) * C));
    });
    if (training_) update_running_statistics();
  }

  /// `src` must be the tensor of the last forward(); differentiates the mode that forward ran in.
  template <class = void>  // instantiated only if used: see common.hpp, "Compile time"
  void backward(context& ctx, const tensor&, const tensor& diff_dst) {
    const device& dev = ctx.dev();
    const float* dz = act_.backward(dev, dst_.data(), diff_dst_(ctx, diff_dst).data);
    const index C = c_.channels;
    const float* mean = used_mean_;
    // dbeta = sum(dz), and sum(dz * (x - mean)), which is dgamma * sigma, in one pass.
    column_sums(dev, [&](index r0, index r1, float* sum_dz, float* sum_dz_xc) {
      for (index r = r0; r < r1; ++r) {
        const float* __restrict x = x_ + r * C;
        const float* __restrict g = dz + r * C;
        for (index ch = 0; ch < C; ++ch) {
          sum_dz[ch] += g[ch];
          sum_dz_xc[ch] += g[ch] * (x[ch] - mean[ch]);
        }
      }
    });
    for (index ch = 0; ch < C; ++ch) {
      p_.diff_bias[ch] = partial_total(ch, 0);
      p_.diff_weights[ch] = partial_total(ch, 1) * inv_std_[ch];
    }
    if (!need_diff_src_) return;
    // training: dx = scale (dz - dbeta / M) - (x - mean) scale / sigma dgamma / M, with both per-channel
    // terms computed once; evaluation: dx = scale dz.
    const float inv_rows = 1.0f / float(rows_);
    for (index ch = 0; ch < C; ++ch) {
      mean_dz_[ch] = last_training_ ? p_.diff_bias[ch] * inv_rows : 0.0f;
      centred_factor_[ch] = last_training_ ? scale_[ch] * inv_std_[ch] * p_.diff_weights[ch] * inv_rows : 0.0f;
    }
    const float* scale = scale_.data();
    const float* mean_dz = mean_dz_.data();
    const float* factor = centred_factor_.data();
    float* const dx = diff_src_.data();
    parallel_for(dev, pieces_, double(piece_rows()) * C * 4, [&](index b, index e) {
      const index r0 = b * piece_rows(), r1 = std::min(rows_, e * piece_rows());
      for (index r = r0; r < r1; ++r) {
        const float* __restrict x = x_ + r * C;
        const float* __restrict g = dz + r * C;
        float* __restrict out = dx + r * C;
        for (index ch = 0; ch < C; ++ch)
          out[ch] = (g[ch] - mean_dz[ch]) * scale[ch] - (x[ch] - mean[ch]) * factor[ch];
      }
    });
  }

 private:
  index piece_rows() const noexcept { return (rows_ + pieces_ - 1) / pieces_; }

  static void add_row(float* __restrict sum, const float* __restrict x, index C) {
    for (index ch = 0; ch < C; ++ch) sum[ch] += x[ch];
  }

  /// Calls f(r0, r1, a, b) for each piece of rows on the pool, with a and b that piece's two zeroed
  /// per-channel partials; partial_total(ch, 0 or 1) then adds them over the pieces in a fixed order, so
  /// the result does not depend on which thread ran which piece.
  template <class F>
  void column_sums(const device& dev, F&& f) {
    const index C = c_.channels;
    std::fill(partials_.begin(), partials_.end(), 0.0f);
    parallel_for(dev, pieces_, double(piece_rows()) * C * 2, [&](index b, index e) {
      for (; b < e; ++b) {
        float* a = partials_.data() + b * 2 * C;
        f(b * piece_rows(), std::min(rows_, (b + 1) * piece_rows()), a, a + C);
      }
    });
  }
  float partial_total(index ch, int which) const {
    const index C = c_.channels;
    float total = 0.0f;
    for (index b = 0; b < pieces_; ++b) total += partials_[std::size_t(b * 2 * C + which * C + ch)];
    return total;
  }

  void update_running_statistics() {
    BatchNorm2d::update_running_statistics({p_.buffers, 2 * std::size_t(c_.channels)}, mean_.data(),
                                           variance_.data(), std::size_t(rows_));
  }

  config c_{};
  ParamSlots p_;
  bool training_ = true, last_training_ = true;
  index rows_ = 0, pieces_ = 1;
  const float* x_ = nullptr;  ///< the NHWC input of the last forward
  const float* used_mean_ = nullptr;
  const float* used_variance_ = nullptr;
  converter src_;
  AlignedBuffer<float> mean_, variance_, scale_, shift_, inv_std_, mean_dz_, centred_factor_, partials_;
  fused_activation act_;
};

}  // namespace sinew::backend::eigen

namespace sinew::backend {
template <>
struct op_for<layer_kind::batch_norm, Eigen> {
  using type = eigen::batch_norm_op;
};
}  // namespace sinew::backend
