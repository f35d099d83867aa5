// sinew/backend/onednn_bf16.hpp: OneDnnBf16, the OneDnn backend with its convolutions and inner products in bf16.
//
//   using Backend = sinew::backend::OneDnnBf16;  // bf16 convolutions and inner products, f32 weights and statistics
//
// What is bf16 and what stays f32. The convolutions (Conv2d, in either of OneDnn's forms) and inner products
// (Dense) read their input and their weights in bf16 and accumulate in f32: forward, backward data and backward
// weights each run oneDNN's bf16 kernels (AVX512_BF16's vdpbf16ps, or AMX), twice the f32 peak. The state and
// the arithmetic that precision matters to stay f32, as in mixed-precision training (PyTorch's autocast keeps the
// same split):
//   - the master weights are the network's flat f32 parameters, which the optimizer updates in f32 with its
//     f32 state; the bf16 weights are re-derived from them before every forward (a reorder that is part of the
//     layer's forward), so an update too small for bf16's 8-bit mantissa still accumulates;
//   - the weight and bias gradients are written in f32 straight into the flat gradient buffer, so every strategy,
//     compressor and checkpoint sees what it sees with OneDnn;
//   - the tensors between layers are bf16 wherever the op that reads them computes in bf16, as under PyTorch's
//     autocast: a convolution without an activation in its layer writes its output in bf16 (ResNet's, before batch
//     norm), batch norm runs in the type it is given (oneDNN's bf16 kernel, with f32 statistics, scale and shift,
//     its ReLU fused), and so do the residual addition (oneDNN's binary) and the ReLU after it (oneDNN's eltwise).
//     Backward, each op writes its input gradient in its input's type. Every op that reads f32 only (sinew's SIMD
//     activations, a convolution's Tanh, pooling, flattening, dropout, inner products, the loss) is given f32:
//     OneDnnBf16's table wraps it in f32_input, which reorders a bf16 input into f32 in the same layout. So a
//     network of ReLUs after convolutions (AlexNet, VGG without batch norm) keeps f32 outputs, and LeNet-5 (Tanh)
//     runs as before. bf16 tensors save the reorders of every convolution's input and output gradient into bf16,
//     and let batch norm read and write bf16 (figures: bench/README.md, "Why the kernels are as they are").
//     Backward data reads the bf16 output gradient that backward weights converted where the output is f32
//     (weighted_layer.hpp), so each is converted once.
//
// Why a backend and not a parameter of OneDnn: `backend::OneDnn` is named in hundreds of places (tables,
// presets, forward declarations), and a precision is a choice of the whole backend as a Mix's base is: a
// policy of its own keeps OneDnn as it is and reads as one word in a configuration. Every layer kind gets
// OneDnn's op: convolutions and inner products with bf16 operands, batch norm and ReLU as they are (they run in the
// type they are given), every other op behind f32_input; and Mix works with OneDnnBf16 as with any backend.
//
// The CPU. oneDNN runs bf16 on its reference kernels where the CPU lacks AVX512_BF16 and AMX (hundreds of times
// slower), so OneDnnBf16's context refuses to start there with a sentence. It asks oneDNN for its effective ISA,
// which ONEDNN_MAX_CPU_ISA lowers: ONEDNN_MAX_CPU_ISA=AVX2 makes a bf16 machine refuse too (the suite tests
// the refusal that way).
#pragma once

#include <string>
#include <type_traits>

#include "sinew/backend/onednn.hpp"

namespace sinew::backend {
struct OneDnnBf16;
}  // namespace sinew::backend

namespace sinew::backend::onednn {

/// The name of oneDNN's effective ISA (what ONEDNN_MAX_CPU_ISA and the CPU allow), for messages.
inline std::string isa_name(dnnl::cpu_isa isa) { return compat::cpu_isa_name(isa); }

/// Whether oneDNN runs bf16 convolutions and inner products on jit kernels here: its effective ISA includes
/// avx512_core_bf16 (AMX includes it). oneDNN's ISA values are nested bit sets, so inclusion is a mask test.
inline bool has_bf16_kernels() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (isa & bf16) == bf16;
}

/// The sentence OneDnnBf16 refuses with where has_bf16_kernels() is false.
inline std::string no_bf16_message() {
  return "backend::OneDnnBf16 needs a CPU with AVX512_BF16 or AMX, and oneDNN's effective ISA here is " +
         isa_name(dnnl::get_effective_cpu_isa()) +
         ": oneDNN would run bf16 on its reference kernels, hundreds of times slower. Use backend::OneDnn (f32) on "
         "this machine, or unset ONEDNN_MAX_CPU_ISA if it is what lowers the ISA";
}

/// OneDnn's context, after checking that the CPU runs bf16 (no_bf16_message() otherwise, as a backend_error).
class bf16_context : public context {
 public:
  /// Checks the CPU first, then builds OneDnn's context from `options`.
  explicit bf16_context(BackendOptions options = {}) : context((check(), std::move(options))) {}

 private:
  static void check() {
    if (!has_bf16_kernels()) throw backend_error(no_bf16_message());
  }
};

/// Op as it is, fed f32 whatever type its input arrives in: a bf16 input is reordered into f32 in its own layout
/// before the op runs, and the op's input gradient stays f32 (the producing op's bind_diff_dst reorders it into
/// its own type). OneDnnBf16 wraps every op that reads f32 only (sinew's SIMD kernels, the f32 pooling and
/// flattening, an inner product's matmul); an f32 input passes through.
template <class Op>
class f32_input : public Op {
 public:
  /// The op contract's setup (backend_spec.hpp).
  template <NodeType N>
  void setup(context& ctx, const desc& src_md, int batch, ParamSlots p, bool need_diff_src) {
    const desc f32 = with_data_type(src_md, dt::f32);
    in_.setup(ctx, src_md, f32);
    Op::template setup<N>(ctx, f32, batch, p, need_diff_src);
  }
  /// @{ The op's passes on the f32 input.
  void forward(context& ctx, const memory& src) { Op::forward(ctx, in_(ctx, src)); }
  void backward(context& ctx, const memory& src, const memory& diff_dst) {
    Op::backward(ctx, in_.target_for(src), diff_dst);
  }
  template <class Probe>
    requires requires(Op& op, context& c, const memory& m, Probe& probe) { op.forward(c, m, probe); }
  void forward(context& ctx, const memory& src, Probe& probe) {
    Op::forward(ctx, in_(ctx, src), probe);
  }
  template <class Probe>
    requires requires(Op& op, context& c, const memory& m, Probe& probe) { op.backward(c, m, m, probe); }
  void backward(context& ctx, const memory& src, const memory& diff_dst, Probe& probe) {
    Op::backward(ctx, in_.target_for(src), diff_dst, probe);
  }
  /// @}
  /// Whether the input arrives in another type and is reordered (what tests check).
  bool converts_input() const noexcept { return in_.needed(); }

 private:
  converter in_;
};

/// conv2d_op with bf16 input and weights (see conv2d_op::setup's `compute`).
class conv2d_bf16_op : public conv2d_op {
 public:
  /// The op contract's setup (backend_spec.hpp).
  template <NodeType N>
  void setup(context& ctx, const desc& src_md, int batch, ParamSlots p, bool need_diff_src) {
    conv2d_op::setup(ctx, src_md, conv2d_config<N>(batch), p, need_diff_src, dt::bf16);
  }
};

/// lowered_conv2d_op with bf16 input and weights: a 1x1 convolution at stride 1 onto a small image as oneDNN's bf16
/// inner product over the NHWC image read in place.
class lowered_conv2d_bf16_op : public lowered_conv2d_op {
 public:
  /// The op contract's setup (backend_spec.hpp).
  template <NodeType N>
  void setup(context& ctx, const desc& src_md, int batch, ParamSlots p, bool need_diff_src) {
    lowered_conv2d_op::setup(ctx, src_md, conv2d_config<N>(batch), p, need_diff_src, dt::bf16);
  }
};

/// small_conv2d_op with bf16 input and weights.
class small_conv2d_bf16_op : public small_conv2d_op {
 public:
  /// The op contract's setup (backend_spec.hpp).
  template <NodeType N>
  void setup(context& ctx, const desc& src_md, int batch, ParamSlots p, bool need_diff_src) {
    small_conv2d_op::setup(ctx, src_md, conv2d_config<N>(batch), p, need_diff_src, dt::bf16);
  }
};

/// dense_op with bf16 input and weights.
class dense_bf16_op : public dense_op {
 public:
  /// The op contract's setup (backend_spec.hpp).
  template <NodeType N>
  void setup(context& ctx, const desc& src_md, int batch, ParamSlots p, bool need_diff_src) {
    using L = typename N::layer;
    dense_op::setup(ctx, src_md, batch, L::kOutputs, L::kHasBias, activation_of<typename N::activation>(), p,
                    need_diff_src, dt::bf16);
  }
};

}  // namespace sinew::backend::onednn

namespace sinew::backend {

/// OneDnn with bf16 convolutions and inner products, f32 master weights, gradients, batch norm and loss
/// (the header's comment says what is bf16 and why). Refuses to start on a CPU without AVX512_BF16 or AMX.
struct OneDnnBf16 {
  /// The Backend contract: backend/backend_spec.hpp says what each member does.
  /// @{
  static constexpr std::string_view kName = "onednn-bf16";
  static constexpr bool kFuseActivations = OneDnn::kFuseActivations;

  using context = onednn::bf16_context;
  using tensor = OneDnn::tensor;
  using tensor_desc = OneDnn::tensor_desc;
  using external = OneDnn::external;
  using converter = OneDnn::converter;

  static tensor_desc plain_desc(int n, int c, int h, int w) { return OneDnn::plain_desc(n, c, h, w); }
  static tensor_desc plain_like(const tensor_desc& d) { return OneDnn::plain_like(d); }
  static void to_plain(context& ctx, const tensor& t, float* out) { OneDnn::to_plain(ctx, t, out); }
  static float* data(const tensor& t) { return OneDnn::data(t); }

  using adder = OneDnn::adder;

  template <NodeType N>
  using op = op_of<OneDnnBf16, N>;  ///< OneDnn's table, with the bf16 ops below for conv2d and dense
  /// @}
};

/// A kind OneDnn lacks: OneDnn's trap.
template <class Kind>
struct op_for<Kind, OneDnnBf16> : op_for<Kind, OneDnn> {};

/// Every kind OneDnnBf16 does not override runs OneDnn's op on f32 input (onednn::f32_input).
template <class Kind>
  requires has_op_for<Kind, OneDnn>
struct op_for<Kind, OneDnnBf16> {
  /// OneDnn's op, fed f32
  template <NodeType N>
  using type_for = onednn::f32_input<op_of<OneDnn, N>>;
};

/// Convolutions in bf16, chosen by OneDnn's rule (onednn::conv2d_op_for). There are no bf16 thin kernels, so a thin
/// layer takes the direct convolution (sinew's thin kernels are f32 only), and so does a small output image (the
/// gathered lowered and Winograd forms are f32 only; the lowering's speed-up was measured on AVX2, where oneDNN has
/// no bf16 kernels), whose backward weights on outputs of at most 4x4 pixels runs as one product over the input's
/// patches (onednn/lowered_backward_weights.hpp). A 1x1 kernel at stride 1 onto a small image (ResNet-50's
/// pointwise layers at 32x32) is the bf16 inner product over the image itself, the rule of f32: measured against
/// conv2d_bf16_op with the lowered backward weights, ResNet-50 ran 1.03x on oneDNN 2.6 and tied on 3.7 (Zen 5,
/// bench/results/2026-12-02-zen5-bf16-pointwise-product). The small-image form reads f32.
template <>
struct op_for<layer_kind::conv2d, OneDnnBf16> {
  /// the small-image form, the pointwise product, else the direct convolution (also for thin and other lowered
  /// layers)
  template <NodeType N>
  using type_for = onednn::conv2d_op_for<
      N, onednn::f32_input<onednn::small_conv2d_bf16_op>, onednn::conv2d_bf16_op, onednn::conv2d_bf16_op,
      std::conditional_t<onednn::conv_reads_image_in_place(N::layer::kKernel, N::layer::kStride, N::layer::kPadding),
                         onednn::lowered_conv2d_bf16_op, onednn::conv2d_bf16_op>,
      onednn::conv2d_bf16_op, onednn::conv2d_bf16_op, onednn::conv2d_bf16_op>;
};

/// Inner products in bf16, on f32 input (the matmul form of the forward reads plain f32).
template <>
struct op_for<layer_kind::dense, OneDnnBf16> {
  /// see onednn::dense_bf16_op
  using type = onednn::f32_input<onednn::dense_bf16_op>;
};

/// An enlarging adaptive pool, Flatten and Dense folded, as on every backend: the Dense in bf16 on the folded matrix.
template <>
struct op_for<layer_kind::pooled_dense, OneDnnBf16> {
  /// see generic::pooled_dense_op
  template <NodeType N>
  using type_for = generic::pooled_dense_op<OneDnnBf16, N>;
};

/// A convolution, its activation and a pool joined (PooledConv) run as the two layers apart: the convolution in bf16
/// (there are no bf16 thin kernels to pool inside), the pool on OneDnn's op fed f32.
template <>
struct op_for<layer_kind::pooled_conv, OneDnnBf16> {
  /// see generic::pooled_conv_op
  template <NodeType N>
  using type_for = generic::pooled_conv_op<OneDnnBf16, N>;
};

/// Batch norm in the type of its input (oneDNN's, with f32 statistics, scale and shift), fused ReLU included;
/// a Tanh or Sigmoid after it runs on sinew's f32 kernels, so that node reads f32.
template <>
struct op_for<layer_kind::batch_norm, OneDnnBf16> {
  /// OneDnn's op, on bf16 where its activation allows
  template <NodeType N>
  using type_for = std::conditional_t<activation_of<typename N::activation>() == simd::activation::none ||
                                          activation_of<typename N::activation>() == simd::activation::relu,
                                      onednn::batch_norm_op, onednn::f32_input<onednn::batch_norm_op>>;
};

/// ReLU and ReLU6 in the type of their input (oneDNN's eltwise on bf16); other activations on sinew's f32 kernels.
template <>
struct op_for<layer_kind::activation, OneDnnBf16> {
  /// OneDnn's op, on bf16 for ReLU and ReLU6
  template <NodeType N>
  using type_for = std::conditional_t<activation_of<typename N::layer>() == simd::activation::relu ||
                                          activation_of<typename N::layer>() == simd::activation::relu6,
                                      onednn::activation_op, onednn::f32_input<onednn::activation_op>>;
};

/// Residual blocks run their branches on OneDnnBf16 (OneDnn's entry would run them in f32).
template <>
struct op_for<layer_kind::residual, OneDnnBf16> {
  /// see generic::residual_op
  template <NodeType N>
  using type_for = generic::residual_op<OneDnnBf16, N>;
};

static_assert(BackendPolicy<OneDnnBf16>);

}  // namespace sinew::backend
