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
  }
};

}  // namespace sinew::backend::onednn

namespace sinew::backend {
template <>
struct op_for<layer_kind::dense, OneDnn> {
  using type = onednn::dense_op;
};
}  // namespace sinew::backend
