// sinew/backend/onednn/conv2d.hpp: Conv2d (+ fused activation) on oneDNN primitives.
//
// As oneDNN's cnn_training_f32 example: every descriptor is format_tag::any so each primitive picks its
// layout (but NHWC where oneDNN's pick is its gemm-based convolution and NHWC gets an AVX2 brgemm one:
// nhwc_where_gemm; where it gets none, a layer with fewer input channels than kernel columns is lowered:
// lowered_where_gemm_conv2d_op); reorders exist only where two layouts differ (input, PyTorch-layout weights,
// gradients) and are created at set-up (weighted_layer.hpp); the forward primitive descriptor is the hint of both
// backward ones.
// Grouped convolutions (depthwise included) and dilated ones run here too, as oneDNN describes them: weights with a
// leading groups dimension (goihw, the same floats as PyTorch's [Out, In/G, K, K]) and dilation counted as the gap
// between taps (PyTorch's dilation - 1).
//
// Kernel taps that only ever meet padding are dropped: a 3x3 kernel with padding 1 over an image one row high
// reads only its centre row, so the primitives run a 1x3 kernel over that sub-block of the weights, for a third of
// the work. oneDNN computes every tap otherwise (and picks a slow gemm-based backward weights kernel for such
// shapes: bench/README.md, "Why the kernels are as they are"). An image no larger than the kernel (ResNet's last
// stage on 32x32 inputs: 1x1 and 2x2) is small_conv2d_op's, an inner product; a small output image (up to 8x8)
// is lowered_conv2d_op's, an inner product over the input's patches, where oneDNN runs its AVX2 kernels
// (lowered_on_avx2_conv2d_op).
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <variant>

#include "sinew/backend/onednn/lowered_conv2d.hpp"
#include "sinew/backend/onednn/small_conv2d.hpp"
#include "sinew/backend/onednn/thin_conv2d.hpp"
#include "sinew/backend/onednn/weighted_layer.hpp"
#include "sinew/backend/onednn/winograd_conv2d.hpp"

namespace sinew::backend::onednn {

/// The taps [first, first + count) of a kernel of `kernel` taps, along one dimension, that some output position
/// reads from the image rather than from padding, with the padding that keeps the output size for them alone.
struct tap_window {
  int first = 0, count = 0, pad_l = 0, pad_r = 0;
  bool trimmed(int kernel) const noexcept { return count < kernel; }
};

constexpr tap_window used_taps(int in, int out, int kernel, int stride, int padding) noexcept {
  // Tap k meets the image at output position o when 0 <= o * stride - padding + k < in: the last output position
  // gives the lowest such tap, the first one the highest.
  const int first = std::max(0, padding - (out - 1) * stride);
  const int last = std::min(kernel - 1, in - 1 + padding);
  tap_window w{first, last - first + 1, padding - first, 0};
  w.pad_r = (out - 1) * stride + w.count - in - w.pad_l;
  if (w.count <= 0 || w.count >= kernel || w.pad_r < 0) return {0, kernel, padding, padding};  // keep every tap
  return w;
}

/// Whether `impl` (a primitive's impl_info_str) is oneDNN's gemm-based convolution (an im2col and a product an
/// image at a time), not one of its brgemm kernels.
inline bool is_gemm_convolution(const char* impl) {
  return impl && std::strstr(impl, "gemm") && !std::strstr(impl, "brg");
}

/// Whether an f32 convolution for which oneDNN chose `impl` in the layouts of its choice asks for NHWC instead:
/// where that choice is oneDNN's gemm-based convolution (an im2col and a product, its fallback for a plain input
/// its blocked AVX2 kernels do not take, such as AlexNet's first layer: 3 channels, an 11x11 kernel at stride 4)
/// and oneDNN runs AVX2 kernels, whose brgemm convolutions (oneDNN 3's brg_conv_fwd:avx2) take NHWC. conv2d_op
/// keeps NHWC only where it gets such a kernel: oneDNN 2.6 has none and gives its gemm convolution again. Only
/// there: with every AlexNet layer NHWC (its 3x3 ones unlowered too) the forwards ran faster but the backward
/// weights slower, and the step no faster; NHWC on the first layer alone ran its forward in half the time
/// (bench/results/2026-12-01-zen4-avx2-nhwc-first-layer-debian13).
/// `excluded`: bf16, grouped or dilated convolutions, which keep oneDNN's choice.
inline bool nhwc_where_gemm(const char* impl, bool excluded) {
  return !excluded && is_gemm_convolution(impl) && !onednn_runs_avx512();
}

/// Whether a bf16 convolution `c` computes its weights' gradient as lowered_backward_weights' product: a dense,
/// bias-free layer with a kernel of at most 3x3 onto an output of at most 4x4 pixels (with all its taps used:
/// conv2d_op checks that). On 8x8 outputs (ResNet-18's 256-channel stage on CIFAR, ResNet-50's first stage at
/// 32x32) the product ran no faster than oneDNN's own. With the 1x1 layers of ResNet-50's later stages at 32x32
/// taken too, its bf16 backward weights took 20.3 ms a step against 37.0 on oneDNN 2.6's kernels (17.0 against
/// 26.7 on oneDNN 3.7's), and the network ran 1.15x (1.16x) faster (Zen 5, medians of 5 rounds:
/// bench/results/2026-12-02-zen5-bf16-pointwise-backward-weights). Since then the stride-1 ones among those run
/// whole as lowered_conv2d_bf16_op (onednn_bf16.hpp), whose weight gradient is its inner product's; of the 1x1
/// layers, the strided projections still reach this product. f32 layers keep oneDNN's backward weights or are
/// lowered whole (lowered_conv2d.hpp).
constexpr bool conv_lowers_backward_weights(const Conv2dConfig& c) noexcept {
  return c.is_dense() && !c.bias && c.kernel <= 3 && c.out_h * c.out_w <= 16;
}

/// Whether a depthwise convolution `c` computes its weights' gradient as depthwise_backward_weights' pass: where
/// oneDNN's backward weights for it is `impl` and that is its gemm convolution (depthwise_backward_weights.hpp says
/// when and why). `excluded`: bf16 layers, and layers whose unused taps are trimmed, which keep oneDNN's choice.
inline bool conv_sums_depthwise_backward_weights(const Conv2dConfig& c, const char* impl, bool excluded) {
  return !excluded && c.is_depthwise() && is_gemm_convolution(impl);
}

class conv2d_op : public weighted_layer<dnnl::convolution_forward, dnnl::convolution_backward_data,
                                        dnnl::convolution_backward_weights> {
 public:
  using config = Conv2dConfig;

  template <NodeType N>
  void setup(context& ctx, const desc& src_md, int batch, ParamSlots p, bool need_diff_src) {
    setup(ctx, src_md, conv2d_config<N>(batch), p, need_diff_src);
  }

  /// `compute` is the type the primitives read their input and weights in: f32, or bf16 for backend::OneDnnBf16
  /// (onednn_bf16.hpp). In bf16 the weight gradient stays f32; the output is bf16 unless an activation follows
  /// in the layer (sinew's SIMD kernels, which read f32, run it), and the input gradient takes the input's type.
  /// The reorders from other tensors and from the f32 master weights into bf16 are the converters of
  /// weighted_layer.hpp, run every step.
  void setup(context& ctx, const desc& src_md, const config& c, ParamSlots p, bool need_diff_src,
             dt compute = dt::f32) {
    using namespace dnnl;
    const auto& eng = ctx.engine();
    const forward_plan plan = plan_forward(eng, c, compute);
    const dims &src_dims = plan.src_dims, &dst_dims = plan.dst_dims, &w_dims = plan.w_dims;
    const dims &strides = plan.strides, &dilates = plan.dilates, &pad = plan.pad, &pad_r = plan.pad_r;
    const bool trim = plan.trim, bf16 = compute == dt::bf16;
    const desc& bias = plan.bias;
    const auto& fwd = plan.fwd;
    const tag layout = plan.layout;
    const dt diff_in = bf16 && compat::data_type_of(src_md) == dt::bf16 ? dt::bf16 : dt::f32;
    const desc w_any(w_dims, compute, tag::any), diff_w_any(w_dims, dt::f32, tag::any);
    // The weights as they lie in the flat buffer: all of them, or the block of taps that are used. The unused
    // taps' gradients are zero; they are set once here and nothing else writes them.
    desc user_w(plan.full_w_dims, dt::f32, plan.grouped ? tag::goihw : tag::oihw);
    if (trim) {
      user_w = user_w.submemory_desc(w_dims, plan.w_offsets);
      std::fill_n(p.diff_weights,
                  std::size_t(c.out_c) * std::size_t(c.in_c / c.groups) * std::size_t(c.kernel * c.kernel), 0.0f);
    }
    const auto alg = algorithm::convolution_direct;
    const desc src_any(src_dims, compute, layout), diff_dst_any(dst_dims, compute, layout);
    const desc diff_src_any(src_dims, diff_in, layout);
    const auto bww = checked("conv2d backward weights", [&] {
      return compat::backward<convolution_backward_weights>(eng, fwd, alg, src_any, diff_w_any, bias, diff_dst_any,
                                                            strides, dilates, pad, pad_r);
    });
    std::optional<backward_data_pd> bwd;
    if (need_diff_src)
      bwd = checked("conv2d backward data", [&] {
        return compat::backward<convolution_backward_data>(eng, fwd, alg, diff_src_any, w_any, diff_dst_any, strides,
                                                           dilates, pad, pad_r);
      });
    finish_setup(ctx, src_md, fwd, bww, bwd, user_w, bias, c.act, p,
                 bf16 && conv_lowers_backward_weights(c) && !trim ? &c : nullptr,
                 conv_sums_depthwise_backward_weights(c, bww.impl_info_str(), bf16 || trim) ? &c : nullptr);
  }

  /// The implementation oneDNN's forward primitive for `c` would run (its impl_info_str), in the layouts setup would
  /// choose: what lowered_where_gemm_conv2d_op asks before either form is set up.
  static std::string forward_implementation(const context& ctx, const config& c, dt compute = dt::f32) {
    return plan_forward(ctx.engine(), c, compute).fwd.impl_info_str();
  }

 private:
  /// What setup derives from the configuration before the backward primitives: the taps used, the weights' shape,
  /// the layouts and the forward primitive.
  struct forward_plan {
    dims src_dims, dst_dims, full_w_dims, w_dims, w_offsets, strides, dilates, pad, pad_r;
    bool trim = false, grouped = false;
    desc bias;
    forward_pd fwd;
    tag layout = tag::any;
  };
  static forward_plan plan_forward(const dnnl::engine& eng, const config& c, dt compute) {
    using namespace dnnl;
    forward_plan f;
    f.src_dims = {c.batch, c.in_c, c.in_h, c.in_w}, f.dst_dims = {c.batch, c.out_c, c.out_h, c.out_w};
    // Trimming assumes adjacent taps: a dilated kernel keeps every tap.
    const bool dilated = c.dilation > 1;
    const tap_window ty = dilated ? tap_window{0, c.kernel, c.padding, c.padding}
                                  : used_taps(c.in_h, c.out_h, c.kernel, c.stride, c.padding);
    const tap_window tx = dilated ? tap_window{0, c.kernel, c.padding, c.padding}
                                  : used_taps(c.in_w, c.out_w, c.kernel, c.stride, c.padding);
    f.trim = ty.trimmed(c.kernel) || tx.trimmed(c.kernel);
    // Grouped weights carry oneDNN's leading groups dimension, [G, O/G, I/G, K, K] (goihw): the same floats as
    // PyTorch's [O, I/G, K, K].
    f.grouped = c.groups > 1;
    f.full_w_dims = f.grouped ? dims{c.groups, c.out_c / c.groups, c.in_c / c.groups, c.kernel, c.kernel}
                              : dims{c.out_c, c.in_c, c.kernel, c.kernel};
    f.w_dims = f.full_w_dims, f.w_offsets = dims(f.full_w_dims.size(), 0);
    if (f.trim) {
      f.w_dims[f.w_dims.size() - 2] = ty.count, f.w_dims.back() = tx.count;
      f.w_offsets[f.w_dims.size() - 2] = ty.first, f.w_offsets.back() = tx.first;
    }
    f.strides = {c.stride, c.stride}, f.dilates = {c.dilation - 1, c.dilation - 1};  // oneDNN counts gaps: D - 1
    f.pad = f.trim ? dims{ty.pad_l, tx.pad_l} : dims{c.padding, c.padding};
    f.pad_r = f.trim ? dims{ty.pad_r, tx.pad_r} : f.pad;
    const bool bf16 = compute == dt::bf16;
    const dt out = bf16 && c.act == simd::activation::none ? dt::bf16 : dt::f32;
    const desc w_any(f.w_dims, compute, tag::any);
    f.bias = c.bias ? desc({c.out_c}, dt::f32, tag::x) : desc();
    // The input's and output's layout: oneDNN's choice (any), or NHWC where its choice is its gemm-based
    // convolution and NHWC gets a brgemm kernel (nhwc_where_gemm).
    const auto forward_in = [&](tag layout) {
      return compat::forward<convolution_forward>(eng, fused_activation::attr(c.act), prop_kind::forward_training,
                                                  algorithm::convolution_direct, desc(f.src_dims, compute, layout),
                                                  w_any, f.bias, desc(f.dst_dims, out, layout), f.strides, f.dilates,
                                                  f.pad, f.pad_r);
    };
    f.fwd = checked("conv2d forward", [&] { return forward_in(tag::any); });
    if (nhwc_where_gemm(f.fwd.impl_info_str(), bf16 || f.grouped || dilated)) {
      try {
        if (auto nhwc = forward_in(tag::acdb); std::strncmp(nhwc.impl_info_str(), "brg", 3) == 0)
          f.fwd = nhwc, f.layout = tag::acdb;
      } catch (const dnnl::error&) {  // keep oneDNN's choice
      }
    }
    return f;
  }
};

/// conv2d_op_or's rule for forms measured faster than oneDNN's AVX2 kernels and slower than, or no faster than,
/// its AVX-512 ones (lowered_conv2d.hpp, winograd_conv2d.hpp): taken where oneDNN runs AVX2 kernels.
struct where_onednn_runs_avx2 {
  static bool takes(const context&, const Conv2dConfig&) { return !onednn_runs_avx512(); }
};

/// conv2d_op_or's rule for a form faster than oneDNN's gemm-based convolution (an im2col and a product an image at
/// a time, its fallback where no direct kernel takes the shape: lowered_conv2d.hpp, conv_gathers_kernel_rows):
/// taken where conv2d_op would run that, in the layouts it would choose.
struct where_onednn_runs_gemm {
  static bool takes(const context& ctx, const Conv2dConfig& c) {
    return is_gemm_convolution(conv2d_op::forward_implementation(ctx, c).c_str());
  }
};

/// A convolution computed by Form where Rule::takes(ctx, config) says so at set-up, else by conv2d_op (oneDNN's
/// primitives), chosen once. The forms differ in layout (the lowered and Winograd forms' output is NHWC); every
/// later op reads the layout it is handed at its own set-up.
template <class Form, class Rule>
class conv2d_op_or {
 public:
  template <NodeType N>
  void setup(context& ctx, const desc& src_md, int batch, ParamSlots p, bool need_diff_src) {
    setup(ctx, src_md, conv2d_config<N>(batch), p, need_diff_src);
  }
  void setup(context& ctx, const desc& src_md, const Conv2dConfig& c, ParamSlots p, bool need_diff_src) {
    if (Rule::takes(ctx, c))
      op_.template emplace<Form>();
    else
      op_.template emplace<conv2d_op>();
    std::visit([&](auto& op) { op.setup(ctx, src_md, c, p, need_diff_src); }, op_);
  }

  /// Whether set-up chose Form (what tests check).
  bool took_form() const noexcept { return std::holds_alternative<Form>(op_); }
  /// Form, where set-up chose it (what tests check).
  const Form* form() const noexcept { return std::get_if<Form>(&op_); }

  desc dst_desc() const {
    return std::visit([](const auto& op) { return op.dst_desc(); }, op_);
  }
  const memory& dst() const noexcept {
    return std::visit([](const auto& op) -> const memory& { return op.dst(); }, op_);
  }
  desc diff_src_desc() const {
    return std::visit([](const auto& op) { return op.diff_src_desc(); }, op_);
  }
  const memory& diff_src() const noexcept {
    return std::visit([](const auto& op) -> const memory& { return op.diff_src(); }, op_);
  }
  void bind_diff_dst(context& ctx, const desc& d) {
    std::visit([&](auto& op) { op.bind_diff_dst(ctx, d); }, op_);
  }
  void set_mode(const ForwardMode& mode) noexcept {
    std::visit([&](auto& op) { op.set_mode(mode); }, op_);
  }

  void forward(context& ctx, const memory& src) { forward(ctx, src, metrics::no_probe); }
  void backward(context& ctx, const memory& src, const memory& diff_dst) {
    backward(ctx, src, diff_dst, metrics::no_probe);
  }
  template <class Probe>
  void forward(context& ctx, const memory& src, Probe& probe) {
    std::visit([&](auto& op) { op.forward(ctx, src, probe); }, op_);
  }
  template <class Probe>
  void backward(context& ctx, const memory& src, const memory& diff_dst, Probe& probe) {
    std::visit([&](auto& op) { op.backward(ctx, src, diff_dst, probe); }, op_);
  }

 private:
  std::variant<conv2d_op, Form> op_;
};

/// A 2x2 or 3x3 convolution onto a small output image: lowered where oneDNN runs AVX2 kernels (lowered_conv2d.hpp).
using lowered_on_avx2_conv2d_op = conv2d_op_or<lowered_conv2d_op, where_onednn_runs_avx2>;
/// A convolution conv_is_winograd takes: Winograd's F(2x2, 3x3) where oneDNN runs AVX2 kernels.
using winograd_on_avx2_conv2d_op = conv2d_op_or<winograd_conv2d_op, where_onednn_runs_avx2>;
/// A convolution with fewer input channels than kernel columns (conv_gathers_kernel_rows: a first layer): lowered,
/// its patches gathered a kernel row at a time, where oneDNN would run its gemm-based convolution.
using lowered_where_gemm_conv2d_op = conv2d_op_or<lowered_conv2d_op, where_onednn_runs_gemm>;

}  // namespace sinew::backend::onednn

namespace sinew::backend {
namespace onednn {
/// The op of a convolution node N, one rule for every precision: Small over an image smaller than its kernel,
/// Thin for a stride-1 layer of at most 16 channels on each side (thin_conv2d.hpp), Winograd for a 3x3 layer at
/// stride 1 without bias or fused activation onto a small image (winograd_conv2d.hpp: Winograd's F(2x2, 3x3) where
/// oneDNN runs AVX2 kernels), for another small output image (lowered_conv2d.hpp) Lowered (a 1x1 kernel)
/// or LoweredOnAvx2 (a 2x2 or 3x3 kernel: lowered where oneDNN runs AVX2 kernels), else LoweredWhereGemm for a
/// layer with fewer input channels than kernel columns (lowered where oneDNN would run its gemm-based convolution)
/// and General on oneDNN's primitives for the rest. Small, Thin, Winograd and the lowered forms compute the plain
/// convolution only: a grouped or dilated one (depthwise included) is General's, oneDNN's grouped convolution.
/// OneDnn's ops are the defaults; OneDnnBf16 passes its own (onednn_bf16.hpp).
template <NodeType N, class Small = small_conv2d_op, class Thin = thin_conv2d_op, class General = conv2d_op,
          class Lowered = lowered_conv2d_op, class LoweredOnAvx2 = lowered_on_avx2_conv2d_op,
          class Winograd = winograd_on_avx2_conv2d_op, class LoweredWhereGemm = lowered_where_gemm_conv2d_op>
using conv2d_op_for = std::conditional_t<
    N::layer::kGroups != 1 || N::layer::kDilation != 1, General,
    std::conditional_t<
        conv_is_small_image(N::input::kHeight, N::input::kWidth, N::output::kHeight, N::output::kWidth,
                            N::layer::kKernel),
        Small,
        std::conditional_t<
            conv_is_thin(N::input::kChannels, N::output::kChannels, N::layer::kStride), Thin,
            std::conditional_t<
                conv_is_winograd(N::layer::kKernel, N::layer::kStride, N::layer::kPadding, N::layer::kHasBias,
                                 activation_of<typename N::activation>() != simd::activation::none,
                                 N::output::kHeight, N::output::kWidth, N::input::kChannels, N::output::kChannels),
                Winograd,
                std::conditional_t<conv_is_lowered(N::output::kHeight, N::output::kWidth, N::layer::kKernel,
                                                   N::layer::kStride, N::output::kChannels),
                                   std::conditional_t<conv_lowering_follows_isa(N::layer::kKernel), LoweredOnAvx2,
                                                      Lowered>,
                                   std::conditional_t<conv_gathers_kernel_rows(N::input::kChannels,
                                                                               N::layer::kKernel),
                                                      LoweredWhereGemm, General>>>>>>;
}  // namespace onednn

/// A convolution's op is chosen from its node's shape (onednn::conv2d_op_for).
template <>
struct op_for<layer_kind::conv2d, OneDnn> {
  template <NodeType N>
  using type_for = onednn::conv2d_op_for<N>;
};
}  // namespace sinew::backend
