// sinew/backend/onednn_bf16.hpp: OneDnnBf16, the OneDnn backend with its convolutions and inner products in bf16.
//
//   using Backend = sinew::backend::OneDnnBf16;  // bf16 convolutions and inner products, f32 everything else
//
// What is bf16 and what stays f32. The convolutions (Conv2d, in either of OneDnn's forms) and inner products
// (Dense) read their input and their weights in bf16 and accumulate in f32: forward, backward data and backward
// weights each run oneDNN's bf16 kernels (AVX512_BF16's vdpbf16ps, or AMX), twice the f32 peak. Everything
// else is f32, as in mixed-precision training (PyTorch's autocast keeps the same split):
//   - the master weights are the network's flat f32 parameters, which the optimizer updates in f32 with its
//     f32 state; the bf16 weights are re-derived from them before every forward (a reorder that is part of the
//     layer's forward), so an update too small for bf16's 8-bit mantissa still accumulates;
//   - the weight and bias gradients are written in f32 straight into the flat gradient buffer, so every strategy,
//     compressor and checkpoint sees what it sees with OneDnn;
//   - the primitives' outputs, the tensors between layers, batch norm (its statistics and its arithmetic), the
//     activations, pooling and the loss are f32 (oneDNN 2.6's bf16 convolutions write f32 outputs and f32 input
//     gradients). Keeping the tensors between layers in bf16 as well would halve their memory traffic but needs
//     every other op in bf16; the compute-bound layers are the ones converted here. What the f32 tensors cost, on
//     the CIFAR-stem ResNet-18 at batch 42 (2 Zen 4 cores, oneDNN's verbose times): the reorders of each
//     convolution's input and output gradient into bf16 took 22 ms and the f32 batch norm 32 ms of a 408 ms
//     step, where PyTorch's autocast keeps convolution outputs, batch norm and ReLU in bf16. Backward data reads
//     the bf16 output gradient that backward weights converted (weighted_layer.hpp), so each is converted once.
//
// Why a backend and not a parameter of OneDnn: `backend::OneDnn` is named in hundreds of places (tables,
// presets, forward declarations), and a precision is a choice of the whole backend as a Mix's base is: a
// policy of its own keeps OneDnn as it is and reads as one word in a configuration. Every layer kind but
// conv2d and dense gets exactly OneDnn's op (the table below inherits OneDnn's entries), and Mix works with
// OneDnnBf16 as with any backend.
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
inline std::string isa_name(dnnl::cpu_isa isa) {
  using I = dnnl::cpu_isa;
  switch (isa) {
    case I::sse41: return "sse41";
    case I::avx: return "avx";
    case I::avx2: return "avx2";
    case I::avx2_vnni: return "avx2_vnni";
    case I::avx512_mic: return "avx512_mic";
    case I::avx512_mic_4ops: return "avx512_mic_4ops";
    case I::avx512_core: return "avx512_core";
    case I::avx512_core_vnni: return "avx512_core_vnni";
    case I::avx512_core_bf16: return "avx512_core_bf16";
    case I::avx512_core_amx: return "avx512_core_amx";
    default: return "cpu_isa " + std::to_string(unsigned(isa));
  }
}

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

/// conv2d_op with bf16 input and weights (see conv2d_op::setup's `compute`).
class conv2d_bf16_op : public conv2d_op {
 public:
  /// The op contract's setup (backend_spec.hpp).
  template <NodeType N>
  void setup(context& ctx, const desc& src_md, int batch, ParamSlots p, bool need_diff_src) {
    conv2d_op::setup(ctx, src_md, conv2d_config<N>(batch), p, need_diff_src, dt::bf16);
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

/// Every kind OneDnnBf16 does not override is OneDnn's entry, the same op type (and OneDnn's trap for a kind
/// OneDnn lacks).
template <class Kind>
struct op_for<Kind, OneDnnBf16> : op_for<Kind, OneDnn> {};

/// Convolutions in bf16, chosen by OneDnn's rule (onednn::conv2d_op_for). There are no bf16 thin kernels, so a thin
/// layer takes the direct convolution (sinew's thin kernels are f32 only).
template <>
struct op_for<layer_kind::conv2d, OneDnnBf16> {
  /// the small-image form, else the direct convolution (also for thin layers)
  template <NodeType N>
  using type_for = onednn::conv2d_op_for<N, onednn::small_conv2d_bf16_op, onednn::conv2d_bf16_op, onednn::conv2d_bf16_op>;
};

/// Inner products in bf16.
template <>
struct op_for<layer_kind::dense, OneDnnBf16> {
  /// see onednn::dense_bf16_op
  using type = onednn::dense_bf16_op;
};

/// Residual blocks run their branches on OneDnnBf16 (OneDnn's entry would run them in f32).
template <>
struct op_for<layer_kind::residual, OneDnnBf16> {
  /// see generic::residual_op
  template <NodeType N>
  using type_for = generic::residual_op<OneDnnBf16, N>;
};

static_assert(Backend<OneDnnBf16>);

}  // namespace sinew::backend
