// sinew/backend/onednn/dense.hpp: Dense (+ fused activation) as a oneDNN inner product.
//
// The input may be 2-D (after Flatten) or 4-D (a C x 1 x 1 input, or any layout oneDNN accepts): the
// weights are then seen as [Out, C, H, W], which is the same memory as PyTorch's [Out, C*H*W].
#pragma once

#include "sinew/backend/onednn/weighted_layer.hpp"

namespace sinew::backend::onednn {

class dense_op : public weighted_layer<dnnl::inner_product_forward, dnnl::inner_product_backward_data,
                                       dnnl::inner_product_backward_weights> {
 public:
  /// Passes of fewer floating-point operations (2 x batch x inputs x outputs each) run on one thread. Waking the
  /// second thread and meeting it at the region's end cost about 4 us a pass on the 2-vCPU Zen 5 guests here,
  /// more than such a pass takes alone: LeNet-5's 120->84 and 84->10 layers at batch 42 (0.85 and 0.07 MFLOP) ran
  /// each pass in 0.8-5.4 us on one thread against 4.9-9.2 us on two; its 400->120 (4 MFLOP) ran as fast either
  /// way, and from 40 MFLOP on two threads halve the time (bench/results/2026-12-04-zen5-lenet5-serial-dense).
  static constexpr double kSerialFlops = 2e6;

  template <NodeType N>
  void setup(context& ctx, const desc& src_md, int batch, ParamSlots p, bool need_diff_src) {
    using L = typename N::layer;
    setup(ctx, src_md, batch, L::kOutputs, L::kHasBias, activation_of<typename N::activation>(), p, need_diff_src);
  }

  /// `compute`: the type of the input and weights the primitives read (f32, or bf16 as conv2d_op says).
  void setup(context& ctx, const desc& src_md, int batch, int outputs, bool has_bias, simd::activation act,
             ParamSlots p, bool need_diff_src, dt compute = dt::f32) {
    using namespace dnnl;
    const auto& eng = ctx.engine();
    const dims in = compat::dims_of(src_md);
    memory::dim inputs = 1;
    for (std::size_t i = 1; i < in.size(); ++i) inputs *= in[i];
    serial_ = ctx.threads() > 1 && 2.0 * double(batch) * double(inputs) * double(outputs) < kSerialFlops;
    const serial_scope one_thread(serial_);  // the primitives below are created for the threads they run on
    dims w_dims = in;
    w_dims[0] = outputs;
    // The weights stay in PyTorch's row-major layout for all three primitives (gemm reads either orientation):
    // left to choose, the forward took them transposed, and transposing AlexNet's 4096x9216 matrix there and its
    // gradient back cost a large share of a training step. The forward's pd is the backward ones' hint; from four
    // rows on it executes as a matmul on the same memories (weighted_layer.hpp: inner_product_matmul), and without
    // AVX-512 kernels the backward data of rows a multiple of 4 KiB runs as two matmuls
    // (inner_product_split_backward_data); weighted_layer.hpp says why.
    const tag user_w_tag = in.size() == 2 ? tag::oi : tag::oihw;
    const desc src_any(in, compute, tag::any), w_rows(w_dims, compute, user_w_tag);
    const desc dst_any({batch, outputs}, dt::f32, tag::any), diff_dst_any({batch, outputs}, compute, tag::any);
    const desc user_w(w_dims, dt::f32, user_w_tag), diff_src_any(in, dt::f32, tag::any);
    const desc bias = has_bias ? desc({outputs}, dt::f32, tag::x) : desc();

    const auto fwd = checked("dense forward", [&] {
      return compat::forward<inner_product_forward>(eng, fused_activation::attr(act), prop_kind::forward_training,
                                                    src_any, w_rows, bias, dst_any);
    });
    const auto bww = checked("dense backward weights", [&] {
      return compat::backward<inner_product_backward_weights>(eng, fwd, src_any, user_w, bias, diff_dst_any);
    });
    std::optional<backward_data_pd> bwd;
    if (need_diff_src)
      bwd = checked("dense backward data", [&] {
        return compat::backward<inner_product_backward_data>(eng, fwd, diff_src_any, w_rows, diff_dst_any);
      });
    finish_setup(ctx, src_md, fwd, bww, bwd, user_w, bias, act, p);
    setup_update_in_backward(ctx, p);
  }
};

}  // namespace sinew::backend::onednn

namespace sinew::backend {
template <>
struct op_for<layer_kind::dense, OneDnn> {
  using type = onednn::dense_op;
};
}  // namespace sinew::backend
