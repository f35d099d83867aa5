// sinew/backend/onednn/fused_dense_update.hpp: a large fully connected layer's backward with the optimizer's update
// folded in, block by block of output rows, when the Model's update inside backward is armed
// (core/in_backward_update.hpp; dist::Local's options.update_in_backward).
//
// At batch 42 a fully connected layer's backward data reads its weights, its backward weights writes their
// gradient (and reads it for ownership first), and the update after backward reads the weights, the gradient and
// the optimizer's state and writes the weights and the state: 32 bytes a parameter, at the memory's pace, for 84
// flops. Here each block of kRows output rows computes its rows of the weights' gradient into a scratch that stays
// in the cache (a matmul, dW[rows] = dY[:, rows]^T X), adds its share of the input gradient while those rows of
// the weights are in the cache (dX += dY[:, rows] W[rows], a matmul adding into dX), and hands the scratch to the
// update: each weight is read and written once, the state once, 16 bytes a parameter. On AlexNet's three fully
// connected layers (Zen 5, 2 threads) the passes and the update took 7.6 ms less a step with oneDNN 2.6 and 5.4
// ms less with 3.7 in a scratch program (bench/results/2026-12-06-zen5-update-in-backward), and AlexNet trains
// 1.07x as fast with oneDNN 2.6, 1.01x with 3.7 (bench/results/2026-12-06-zen5-dense-update-in-backward), but only
// while the two threads share a cache: without one AlexNet trained 0.85x and 0.79x as fast
// (bench/results/2026-12-06-zen5-issue34-every-row-both-stacks). Not because the matmul and the update split a
// block between the threads differently: with each thread computing and updating its own rows it still lost, its
// one-thread matmuls slower than the inner product on both threads by about what the update saved
// (bench/results/2026-12-06-zen5-update-in-backward-row-split). The input gradient is summed over the blocks in
// another order than the inner product's, so it differs in the last bits; the layer's gradients are not written to
// the gradient buffer. The bias's gradient of each block is its columns' sums of dY.
//
// Set up where the Model holds an update when it builds its plan, for f32 layers of at least kMinParams weights
// whose input, output and input gradient lie plain (row-major [batch, features]), and not where the layer's
// backward data runs as inner_product_split_backward_data (oneDNN's AVX2 gemm on rows 4 KiB apart,
// weighted_layer.hpp); taken in the backward passes the Model arms.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>

#include "sinew/backend/backend_spec.hpp"
#include "sinew/backend/onednn/common.hpp"
#include "sinew/backend/onednn/compat.hpp"
#include "sinew/tensor/buffer.hpp"

namespace sinew::backend::onednn {

class fused_dense_update {
 public:
  /// Output rows a block takes: its gradient's scratch (kRows x inputs floats: 4.5 MiB for AlexNet's 9216 inputs)
  /// stays in the cache; 64 and 256 rows ran as fast within 3% on Debian 12 (the bench/results above).
  static constexpr memory::dim kRows = 128;
  /// The fewest weights for which the layer takes this path: smaller layers' gradients and state stay in the
  /// cache anyway, and their blocks would be few rows of little work each.
  static constexpr std::size_t kMinParams = std::size_t(1) << 20;

  /// Sets the path up for a layer of `fwd`'s shapes whose parameters lie at `p`, writing its input gradient into
  /// `diff_src` (empty: none); stays off (operator bool false) where the file comment says it is not taken.
  void setup(context& ctx, const dnnl::inner_product_forward::primitive_desc& fwd, const ParamSlots& p,
             const memory& diff_src, bool split_backward_data) {
    if (p.update_in_backward == nullptr || !p.update_in_backward->has_update() || split_backward_data) return;
    const desc src_md = fwd.src_desc(), dst_md = fwd.dst_desc(), w_md = fwd.weights_desc();
    if (compat::data_type_of(src_md) != dt::f32 || compat::data_type_of(w_md) != dt::f32) return;
    if (!(src_md == plain_like(src_md) && dst_md == plain_like(dst_md))) return;
    if (diff_src && !(diff_src.get_desc() == plain_like(diff_src.get_desc()))) return;
    const auto src_dims = compat::dims_of(src_md);
    memory::dim in = 1;
    for (std::size_t i = 1; i < src_dims.size(); ++i) in *= src_dims[i];
    const memory::dim batch = src_dims[0], out = compat::dims_of(dst_md)[1];
    if (std::size_t(in) * std::size_t(out) < kMinParams) return;
    batch_ = batch, in_ = in, out_ = out;
    update_ = p.update_in_backward;
    weights_ = p.weights, bias_ = p.bias;
    scratch_ = AlignedBuffer<float>(std::size_t(kRows) * std::size_t(in));
    bias_scratch_ = AlignedBuffer<float>(std::size_t(kRows));
    const memory::dim rows[2] = {std::min(kRows, out), out % kRows};
    for (int k = 0; k < 2; ++k)
      if (rows[k] > 0 && (k == 0 || rows[1] != rows[0]))
        blocks_[k].setup(ctx, batch, in, out, rows[k], static_cast<bool>(diff_src));
  }

  /// Whether the layer takes this path in the current backward: set up, and the Model's update armed.
  bool armed() const noexcept { return update_ != nullptr && update_->armed(); }

  /// Backward and the update: `src` is the forward's input (plain), `dz` the gradient of the layer's output before
  /// its activation (plain), `diff_src` where the input gradient goes (empty: none).
  void run(context& ctx, const memory& src, const memory& dz, const memory& diff_src) {
    const float* dy = static_cast<const float*>(dz.get_data_handle());
    for (memory::dim r0 = 0; r0 < out_; r0 += kRows) {
      const memory::dim rows = std::min(kRows, out_ - r0);
      block& b = rows == blocks_[0].rows ? blocks_[0] : blocks_[1];
      float* w = weights_ + std::size_t(r0) * std::size_t(in_);
      b.dy_t.set_data_handle(const_cast<float*>(dy + r0));
      b.x.set_data_handle(src.get_data_handle());
      b.dw.set_data_handle(scratch_.data());
      onednn::run(ctx, b.weights, b.weights_args);
      if (b.has_data) {
        b.dy.set_data_handle(const_cast<float*>(dy + r0));
        b.w.set_data_handle(w);
        b.dx.set_data_handle(diff_src.get_data_handle());
        if (r0 == 0)
          onednn::run(ctx, b.data_first, b.data_args);
        else
          onednn::run(ctx, b.data_adding, b.data_args);
      }
      (*update_)(w, std::size_t(rows) * std::size_t(in_), scratch_.data());
      if (bias_ != nullptr) {
        float* db = bias_scratch_.data();
        std::fill(db, db + rows, 0.0f);
        for (memory::dim i = 0; i < batch_; ++i) {
          const float* row = dy + std::size_t(i) * std::size_t(out_) + std::size_t(r0);
          for (memory::dim j = 0; j < rows; ++j) db[j] += row[j];
        }
        (*update_)(bias_ + r0, std::size_t(rows), db);
      }
    }
  }

  explicit operator bool() const noexcept { return update_ != nullptr; }

 private:
  /// The primitives of a block of `rows` output rows (every block but a last, shorter one shares them).
  struct block {
    memory::dim rows = 0;
    bool has_data = false;
    dnnl::matmul weights, data_first, data_adding;
    memory dy_t, x, dw, dy, w, dx;
    bound_args weights_args, data_args;

    void setup(context& ctx, memory::dim batch, memory::dim in, memory::dim out, memory::dim r, bool data) {
      const auto& eng = ctx.engine();
      rows = r, has_data = data;
      // dW[rows] = dY[:, rows]^T X: dY's columns read through strides, the scratch row-major.
      const desc a({r, batch}, dt::f32, memory::dims{1, out}), b({batch, in}, dt::f32, memory::dims{in, 1}),
          c({r, in}, dt::f32, memory::dims{in, 1});
      weights = dnnl::matmul(checked("dense backward with the update: weights' block", [&] {
        return compat::forward<dnnl::matmul>(eng, dnnl::primitive_attr(), a, b, desc(), c);
      }));
      dy_t = memory(a, eng, DNNL_MEMORY_NONE), x = memory(b, eng, DNNL_MEMORY_NONE),
      dw = memory(c, eng, DNNL_MEMORY_NONE);
      weights_args = {{DNNL_ARG_SRC, dy_t}, {DNNL_ARG_WEIGHTS, x}, {DNNL_ARG_DST, dw}};
      if (!data) return;
      // dX (+)= dY[:, rows] W[rows]: the first block writes dX, the others add into it.
      const desc dy_md({batch, r}, dt::f32, memory::dims{out, 1}), w_md({r, in}, dt::f32, memory::dims{in, 1}),
          dx_md({batch, in}, dt::f32, memory::dims{in, 1});
      dnnl::primitive_attr adding;
      dnnl::post_ops sum;
      sum.append_sum(1.0f);
      adding.set_post_ops(sum);
      data_first = dnnl::matmul(checked("dense backward with the update: input gradient", [&] {
        return compat::forward<dnnl::matmul>(eng, dnnl::primitive_attr(), dy_md, w_md, desc(), dx_md);
      }));
      data_adding = dnnl::matmul(checked("dense backward with the update: input gradient, adding", [&] {
        return compat::forward<dnnl::matmul>(eng, adding, dy_md, w_md, desc(), dx_md);
      }));
      dy = memory(dy_md, eng, DNNL_MEMORY_NONE), w = memory(w_md, eng, DNNL_MEMORY_NONE),
      dx = memory(dx_md, eng, DNNL_MEMORY_NONE);
      data_args = {{DNNL_ARG_SRC, dy}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, dx}};
    }
  };

  const InBackwardUpdate* update_ = nullptr;
  float *weights_ = nullptr, *bias_ = nullptr;
  memory::dim batch_ = 0, in_ = 0, out_ = 0;
  AlignedBuffer<float> scratch_, bias_scratch_;
  std::array<block, 2> blocks_;
};

}  // namespace sinew::backend::onednn
