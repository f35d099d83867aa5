// sinew/backend/onednn/weighted_layer.hpp: what Conv2d and Dense share on oneDNN. Given the three primitive
// descriptors a layer chose (forward, backward weights, and backward data when the input gradient is
// needed), it owns the memories, the reorders between layouts, the fused activation and the bound
// arguments, and runs forward and backward. Each layer only describes its primitives. An inner product's forward
// runs as a matmul on the same memories (inner_product_matmul below), and without AVX-512 kernels its backward
// data, where W's rows lie a multiple of 4 KiB apart, as two matmuls (inner_product_split_backward_data).
#pragma once

#include <optional>
#include <tuple>
#include <type_traits>

#include "sinew/backend/generic/probe.hpp"
#include "sinew/backend/generic/weight_cache.hpp"
#include "sinew/backend/onednn/common.hpp"
#include "sinew/backend/onednn/depthwise_backward_weights.hpp"
#include "sinew/backend/onednn/fused_dense_update.hpp"
#include "sinew/backend/onednn/lowered_backward_weights.hpp"

namespace sinew::backend::onednn {

/// The forward pass of an inner product with row-major weights (PyTorch's [Out, In], the flat buffer's layout)
/// as oneDNN's matmul primitive, src [N, In] x weights [In, Out] read through strides from the same memory.
///
/// oneDNN 2.6's inner product runs that forward on its gemm in the transposed orientation (`x64:gemm:jit`), which
/// on AVX-512 reaches a small fraction of peak, far below its own backward data on the same matrix (bench/ops'
/// fc_forward_inner_product row is the old forward beside fc_forward, the new one). The matmul primitive takes
/// strided weights on its brgemm kernels, so the weights stay where the optimizer, strategies and checkpoints
/// see them: nothing is reordered. (Weights in the layout oneDNN picks for the inner product ran as fast, but
/// reordering them once per step cost as much again.) On AVX2 the matmul lands on the same gemm as the inner
/// product and runs as fast. The backward passes stay inner products: their gemm orientations are fast.
/// ReLU is the same post-op; the bias a [1, Out] row. Taken only where the inner product chose plain src and
/// dst (nc or nchw, the same bytes as [N, In] and [N, Out]), and for batches of at least kMinBatch rows: on one
/// to three rows the inner product's matrix-vector kernel is the faster. Otherwise the inner product runs
/// (figures: bench/README.md, "Why the kernels are as they are").
class inner_product_matmul {
 public:
  /// The fewest rows (batch) for which the forward runs as a matmul.
  static constexpr int kMinBatch = 4;

  /// Builds the matmul for inner product `ip` on `weights`, `bias` (empty without) and `dst` in place, fusing
  /// `act` as `ip` does; leaves the forward to `ip` where the conditions above do not hold.
  void setup(context& ctx, const dnnl::inner_product_forward::primitive_desc& ip, const memory& weights,
             const memory& bias, const memory& dst, simd::activation act) {
    const desc src_md = ip.src_desc(), dst_md = ip.dst_desc(), w_md = ip.weights_desc();
    if (!(src_md == plain_like(src_md) && dst_md == plain_like(dst_md) && w_md == plain_like(w_md))) return;
    const auto src_dims = compat::dims_of(src_md), dst_dims = compat::dims_of(dst_md);
    memory::dim in = 1;
    for (std::size_t i = 1; i < src_dims.size(); ++i) in *= src_dims[i];
    const memory::dim batch = src_dims[0], out = dst_dims[1];
    if (batch < kMinBatch) return;
    const auto& eng = ctx.engine();
    const desc src2({batch, in}, dt::f32, tag::ab), dst2({batch, out}, dt::f32, tag::ab);
    const desc w2({in, out}, dt::f32, tag::ba);  // [Out, In] row-major, read as its transpose
    const bool has_bias = bool(bias);
    const desc bias2 = has_bias ? desc({1, out}, dt::f32, tag::ab) : desc();
    const auto pd = checked("inner product forward as matmul", [&] {
      return compat::forward<dnnl::matmul>(eng, fused_activation::attr(act), src2, w2, bias2, dst2);
    });
    matmul_ = dnnl::matmul(pd);
    src_ = memory(src2, eng, DNNL_MEMORY_NONE);
    args_ = {{DNNL_ARG_SRC, src_},
             {DNNL_ARG_WEIGHTS, memory(w2, eng, weights.get_data_handle())},
             {DNNL_ARG_DST, memory(dst2, eng, dst.get_data_handle())}};
    if (has_bias) args_.set(DNNL_ARG_BIAS, memory(bias2, eng, bias.get_data_handle()));
    taken_ = true;
  }
  /// Whether the forward runs as the matmul.
  explicit operator bool() const noexcept { return taken_; }
  /// `src` holds the inner product's plain src; read in place.
  void run(context& ctx, const memory& src) {
    void* handle = src.get_data_handle();
    if (handle != src_handle_) src_.set_data_handle(src_handle_ = handle);
    onednn::run(ctx, matmul_, args_);
  }

 private:
  bool taken_ = false;
  dnnl::matmul matmul_;
  memory src_;
  void* src_handle_ = nullptr;
  bound_args args_;
};

/// The backward-data pass of an inner product, dx = dy W with W row-major [Out, In] in the flat buffer, as two
/// matmuls of which the large one reads W from 16 bytes past its start, where oneDNN's AVX2 gemm is slow on W
/// itself.
///
/// Without AVX-512 kernels (an AVX2 CPU, or oneDNN capped by ONEDNN_MAX_CPU_ISA=AVX2), oneDNN 2.6 runs this
/// product on its AVX2 gemm, which is much slower when W's rows lie a multiple of 4 KiB apart (In a multiple of
/// 1024: AlexNet's 9216->4096 and 4096->4096) and W starts on a 64-byte boundary, as every tensor of the flat
/// buffer does; the backward weights and the forward on the same shapes are not. W read from 4 floats (16 bytes)
/// past its start runs at the fast rate (from 8 floats on it is slower still), so the first kSplitColumns
/// input columns get a matmul of their own and the rest a second one, both through strides into the same
/// memories: the weights stay where the optimizer, strategies and checkpoints see them, and dx is the same
/// sums. Taken only there: with AVX-512 kernels the product runs as fast either way, and where In is not a
/// multiple of 1024 (AlexNet's small-image convolutions) the split costs more than it saves; both keep the inner
/// product's backward data; so do batches under kMinBatch rows, where the gemm takes another path that is fast
/// on aligned W. Like inner_product_matmul, it needs plain dy and dx
/// (figures: bench/README.md, "Why the kernels are as they are").
class inner_product_split_backward_data {
 public:
  /// The fewest rows (batch) for which backward data is split.
  static constexpr memory::dim kMinBatch = 32;
  /// The input columns computed apart, so that the large matmul starts 16 bytes into W.
  static constexpr memory::dim kSplitColumns = 4;
  /// In, in floats, whose rows lie 4 KiB apart (a multiple of it: the slow case).
  static constexpr memory::dim kAliasedRowFloats = 4096 / sizeof(float);

  /// Whether an inner product of `in` inputs on `batch` rows takes the split here (a CPU or cap without AVX-512).
  static bool wanted(memory::dim in, memory::dim batch) {
    return !onednn_runs_avx512() && in % kAliasedRowFloats == 0 && batch >= kMinBatch;
  }

  /// Builds the two matmuls for backward data `bwd` on `weights` and `diff_src` in place; leaves the pass to
  /// `bwd` where wanted() or the plain layouts do not hold.
  void setup(context& ctx, const dnnl::inner_product_backward_data::primitive_desc& bwd, const memory& weights,
             const memory& diff_src) {
    const desc dx_md = bwd.diff_src_desc(), dy_md = bwd.diff_dst_desc(), w_md = bwd.weights_desc();
    if (!(dx_md == plain_like(dx_md) && dy_md == plain_like(dy_md) && w_md == plain_like(w_md))) return;
    const auto dx_dims = compat::dims_of(dx_md), dy_dims = compat::dims_of(dy_md);
    memory::dim in = 1;
    for (std::size_t i = 1; i < dx_dims.size(); ++i) in *= dx_dims[i];
    const memory::dim batch = dx_dims[0], out = dy_dims[1];
    if (!wanted(in, batch)) return;
    const auto& eng = ctx.engine();
    const desc dy2({batch, out}, dt::f32, tag::ab);
    dy_ = memory(dy2, eng, DNNL_MEMORY_NONE);
    auto* w = static_cast<float*>(weights.get_data_handle());
    auto* dx = static_cast<float*>(diff_src.get_data_handle());
    // Columns [first, first + cols) of W ([Out, In] row-major) and of dx ([N, In]), through In-float row strides.
    const auto part = [&](memory::dim first, memory::dim cols) {
      const desc w_part({out, cols}, dt::f32, dims{in, 1}), dx_part({batch, cols}, dt::f32, dims{in, 1});
      const auto pd = checked("inner product backward data as matmul",
                              [&] { return compat::forward<dnnl::matmul>(eng, {}, dy2, w_part, dx_part); });
      return std::pair{dnnl::matmul(pd), bound_args{{DNNL_ARG_SRC, dy_},
                                                     {DNNL_ARG_WEIGHTS, memory(w_part, eng, w + first)},
                                                     {DNNL_ARG_DST, memory(dx_part, eng, dx + first)}}};
    };
    std::tie(head_, head_args_) = part(0, kSplitColumns);
    std::tie(rest_, rest_args_) = part(kSplitColumns, in - kSplitColumns);
    taken_ = true;
  }
  /// Whether backward data runs as the two matmuls.
  explicit operator bool() const noexcept { return taken_; }
  /// `diff_dst` holds dy in the plain layout; read in place.
  void run(context& ctx, const memory& diff_dst) {
    void* handle = diff_dst.get_data_handle();
    if (handle != dy_handle_) dy_.set_data_handle(dy_handle_ = handle);
    onednn::run(ctx, head_, head_args_);
    onednn::run(ctx, rest_, rest_args_);
  }

 private:
  bool taken_ = false;
  dnnl::matmul head_, rest_;
  memory dy_;
  void* dy_handle_ = nullptr;
  bound_args head_args_, rest_args_;
};

/// A probe that reports an inner product's kinds as a convolution's: for the convolutions that run as inner
/// products (conv_as_inner_product below), which profiles count as the convolutions they are.
template <class Probe>
struct inner_product_as_convolution {
  Probe& probe;
  void begin(metrics::OpKind k) { probe.begin(as_convolution(k)); }
  void resume(metrics::OpKind k) { probe.resume(as_convolution(k)); }

 private:
  static constexpr metrics::OpKind as_convolution(metrics::OpKind k) {
    using K = metrics::OpKind;
    return k == K::fully_connected                    ? K::convolution
           : k == K::fully_connected_backward_weights ? K::convolution_backward_weights
           : k == K::fully_connected_backward_data    ? K::convolution_backward_data
                                                      : k;
  }
};

template <class Forward, class BackwardData, class BackwardWeights>
class weighted_layer {
 public:
  desc dst_desc() const { return fwd_pd_.dst_desc(); }
  const memory& dst() const noexcept { return dst_; }
  desc diff_src_desc() const { return diff_src_ ? diff_src_.get_desc() : desc(); }
  const memory& diff_src() const noexcept { return diff_src_; }
  void bind_diff_dst(context& ctx, const desc& d) { diff_dst_.setup(ctx, d, fwd_pd_.dst_desc()); }

  void forward(context& ctx, const memory& src) { forward(ctx, src, metrics::no_probe); }
  void backward(context& ctx, const memory& src, const memory& diff_dst) {
    backward(ctx, src, diff_dst, metrics::no_probe);
  }

  /// Whether the next forward may keep the weights it reordered last time (backend/generic/weight_cache.hpp).
  void set_mode(const ForwardMode& mode) noexcept { weights_cache_.set_mode(mode); }

  /// Reports the fused activation's own pass (Tanh, Sigmoid) apart from the primitive (see metrics/profile.hpp).
  template <class Probe>
  void forward(context& ctx, const memory& src, Probe& probe) {
    forward(ctx, src, probe, weights_cache_.take());
  }

  /// `src` must be the tensor of the last forward(). Reports the activation's backward, backward weights and
  /// backward data apart.
  template <class Probe>
  void backward(context& ctx, const memory& src, const memory& diff_dst, Probe& probe) {
    const serial_scope one_thread(serial_);
    if (&diff_dst != bound_diff_dst_) bind_diff_dst_tensor(diff_dst);
    if (act_.active()) probe.begin(activation_kind(act_.kind(), metrics::Direction::backward));
    diff_dst_.run(ctx, diff_dst);
    const memory& dd = diff_dst_.target_for(diff_dst);
    act_.backward(dst_, dd);
    const memory& dz = act_.target_for(dd);
    probe.begin(kWeightsKind);
    if (fused_update_.armed()) {  // a large Dense: backward and the update, block by block
      fused_update_.run(ctx, src_.target_for(src), dz, diff_src_);
      return;
    }
    if (own_bww()) {
      if (lowered_bww_)
        lowered_bww_.run(ctx, src_.target_for(src), dz);
      else
        depthwise_bww_.run(ctx, src_.target_for(src), dz);
      if (bwd_shares_diff_dst_) bww_diff_dst_.run(ctx, dz);
    } else {
      bww_src_.run(ctx, src_.target_for(src));
      bww_diff_dst_.run(ctx, dz);
      run(ctx, bww_, bww_args_);
      diff_w_.commit(ctx);
      if (has_bias_) diff_b_.commit(ctx);
    }
    if (split_bwd_) {
      probe.begin(kDataKind);
      split_bwd_.run(ctx, dz);
    } else if (bwd_) {
      probe.begin(kDataKind);
      bwd_diff_dst_.run(ctx, dz);
      bwd_w_.run(ctx, w_.target_for(user_w_));
      run(ctx, bwd_, bwd_args_);
    }
  }

 protected:
  /// The forward pass; `derive`: reorder the weights into the primitive's layout (else the copy of an earlier
  /// forward holds: weight_cache said so).
  template <class Probe>
  void forward(context& ctx, const memory& src, Probe& probe, bool derive) {
    const serial_scope one_thread(serial_);
    if (&src != bound_src_) bind_src(src);
    probe.begin(kForwardKind);
    src_.run(ctx, src);
    if (matmul_) {
      matmul_.run(ctx, src_.target_for(src));
    } else {
      if (derive) w_.run(ctx, user_w_);
      run(ctx, fwd_, fwd_args_);
    }
    if (act_.separate_pass()) probe.begin(activation_kind(act_.kind(), metrics::Direction::forward));
    act_.forward(dst_);
  }
  /// Whether this forward must derive the weights' copy (a layer that derives more of its own asks it too).
  weight_cache weights_cache_;
  /// Whether the layer's passes run on one thread (a layer sets it before creating its primitives, in a
  /// serial_scope: dense_op::kSerialFlops says when).
  bool serial_ = false;
  /// Backward with the optimizer's update folded in (fused_dense_update.hpp), which dense_op sets up after
  /// finish_setup: the flat buffer's weights are the matrix it updates (not so for the convolutions that run as
  /// an inner product).
  fused_dense_update fused_update_;

  static constexpr bool kConvolution = std::is_same_v<Forward, dnnl::convolution_forward>;
  static constexpr bool kInnerProduct = std::is_same_v<Forward, dnnl::inner_product_forward>;
  static constexpr auto kForwardKind = kConvolution ? metrics::OpKind::convolution : metrics::OpKind::fully_connected;
  static constexpr auto kWeightsKind = kConvolution ? metrics::OpKind::convolution_backward_weights
                                                    : metrics::OpKind::fully_connected_backward_weights;
  static constexpr auto kDataKind =
      kConvolution ? metrics::OpKind::convolution_backward_data : metrics::OpKind::fully_connected_backward_data;

  using forward_pd = typename Forward::primitive_desc;
  using backward_data_pd = typename BackwardData::primitive_desc;
  using backward_weights_pd = typename BackwardWeights::primitive_desc;

  /// Called by the layer's setup once it has chosen its primitives. `user_w` describes the weights as they
  /// lie in the flat buffer (PyTorch's layout); `bias` is empty for a layer without one. `lower_bww`: a bias-free
  /// convolution in bf16 whose output image is small (conv_lowers_backward_weights), whose backward weights runs as
  /// lowered_backward_weights' product into the flat buffer's [Out, In, K, K]: oneDNN's primitive is not created
  /// and its conversions and staging are not set up, save the output gradient's bf16 copy where backward data
  /// reads it. `bww` still describes the layouts backward weights would read. `depthwise_bww`: an f32 depthwise
  /// convolution whose backward weights runs as depthwise_backward_weights' pass, likewise.
  void finish_setup(context& ctx, const desc& src_md, const forward_pd& fwd, const backward_weights_pd& bww,
                    const std::optional<backward_data_pd>& bwd, const desc& user_w, const desc& bias,
                    simd::activation act, ParamSlots p, const Conv2dConfig* lower_bww = nullptr,
                    const Conv2dConfig* depthwise_bww = nullptr) {
    const auto& eng = ctx.engine();
    has_bias_ = !(bias == desc());
    fwd_pd_ = fwd;
    fwd_ = Forward(fwd);
    src_.setup(ctx, src_md, fwd.src_desc());
    user_w_ = memory(user_w, eng, p.weights);
    w_.setup(ctx, user_w, fwd.weights_desc());
    if (has_bias_) user_b_ = memory(bias, eng, p.bias);
    dst_ = memory(fwd.dst_desc(), eng);
    act_.setup(ctx, act, fwd.dst_desc());
    if constexpr (kInnerProduct) matmul_.setup(ctx, fwd, user_w_, user_b_, dst_, act);

    if (lower_bww) {
      lowered_bww_.setup(ctx, *lower_bww, fwd.src_desc(), fwd.dst_desc(), p.diff_weights);
    } else if (depthwise_bww) {
      depthwise_bww_.setup(ctx, *depthwise_bww, fwd.src_desc(), fwd.dst_desc(), p.diff_weights, p.diff_bias);
    } else {
      bww_ = BackwardWeights(bww);
      bww_src_.setup(ctx, fwd.src_desc(), bww.src_desc());
      diff_w_.setup(ctx, bww.diff_weights_desc(), memory(user_w, eng, p.diff_weights));
      if (has_bias_) diff_b_.setup(ctx, bww.diff_bias_desc(), memory(bias, eng, p.diff_bias));
    }
    bww_diff_dst_.setup(ctx, fwd.dst_desc(), bww.diff_dst_desc());

    if (bwd) {
      bwd_ = BackwardData(*bwd);
      bwd_w_.setup(ctx, fwd.weights_desc(), bwd->weights_desc());
      // Backward data reads the output gradient that backward weights converted where both want the same
      // layout (OneDnnBf16's bf16 copy of it: one reorder per layer and step instead of two).
      bwd_shares_diff_dst_ = bww_diff_dst_.needed() && bwd->diff_dst_desc() == bww.diff_dst_desc();
      if (bwd_shares_diff_dst_)
        bwd_diff_dst_ = {};
      else
        bwd_diff_dst_.setup(ctx, fwd.dst_desc(), bwd->diff_dst_desc());
      diff_src_ = memory(bwd->diff_src_desc(), eng);
      // dy reaches the split as the forward's dst layout, unconverted.
      if constexpr (kInnerProduct)
        if (bwd->diff_dst_desc() == fwd.dst_desc()) split_bwd_.setup(ctx, *bwd, user_w_, diff_src_);
    }
    if (own_bww() && !bwd_shares_diff_dst_) bww_diff_dst_ = {};  // sinew's pass reads the gradient itself
  }

 public:
  /// Whether the layer's passes run on one thread however many the context has (what tests check).
  bool runs_on_one_thread() const noexcept { return serial_; }
  /// Whether backward weights runs as lowered_backward_weights' product (what tests check).
  bool backward_weights_lowered() const noexcept { return static_cast<bool>(lowered_bww_); }
  /// Whether backward weights runs as depthwise_backward_weights' pass (what tests check).
  bool backward_weights_depthwise() const noexcept { return static_cast<bool>(depthwise_bww_); }
  /// The primitive the forward pass executes: matmul where inner_product_matmul could take the inner product's
  /// place, else the layer's own forward primitive (what tests check to see the fast path taken).
  dnnl::primitive::kind forward_primitive_kind() const {
    return matmul_ ? dnnl::primitive::kind::matmul : fwd_.get_kind();
  }
  /// Whether backward data reads the output gradient as backward weights converted it (one reorder of it per
  /// step, not two): where both primitives want the same layout and it differs from the forward's output, as
  /// OneDnnBf16's bf16 copy of an f32 gradient does.
  bool backward_data_shares_diff_dst() const noexcept { return bwd_shares_diff_dst_; }
  /// The primitive the backward-data pass executes: matmul where inner_product_split_backward_data took it, else
  /// the layer's own backward-data primitive; undef without an input gradient.
  dnnl::primitive::kind backward_data_primitive_kind() const {
    if (split_bwd_) return dnnl::primitive::kind::matmul;
    return bwd_ ? bwd_.get_kind() : dnnl::primitive::kind::undef;
  }

 private:
  void bind_src(const memory& src) {
    bound_src_ = &src;
    const memory& s = src_.target_for(src);
    fwd_args_ = {{DNNL_ARG_SRC, s}, {DNNL_ARG_WEIGHTS, w_.target_for(user_w_)}, {DNNL_ARG_DST, dst_}};
    if (has_bias_) fwd_args_.set(DNNL_ARG_BIAS, user_b_);
    if (own_bww()) return;  // backward weights has arguments of its own
    bww_args_.set(DNNL_ARG_SRC, bww_src_.target_for(s));
    bww_args_.set(DNNL_ARG_DIFF_WEIGHTS, diff_w_.output());
    if (has_bias_) bww_args_.set(DNNL_ARG_DIFF_BIAS, diff_b_.output());
  }
  void bind_diff_dst_tensor(const memory& diff_dst) {
    bound_diff_dst_ = &diff_dst;
    const memory& dz = act_.target_for(diff_dst_.target_for(diff_dst));
    if (!own_bww()) bww_args_.set(DNNL_ARG_DIFF_DST, bww_diff_dst_.target_for(dz));
    if (bwd_)
      bwd_args_ = {{DNNL_ARG_DIFF_DST, bwd_shares_diff_dst_ ? bww_diff_dst_.target_for(dz) : bwd_diff_dst_.target_for(dz)},
                   {DNNL_ARG_WEIGHTS, bwd_w_.target_for(w_.target_for(user_w_))},
                   {DNNL_ARG_DIFF_SRC, diff_src_}};
  }

  bool has_bias_ = true;
  /// Whether backward data reads bww_diff_dst_'s conversion of the output gradient (bwd_diff_dst_ unused).
  bool bwd_shares_diff_dst_ = false;
  forward_pd fwd_pd_;
  Forward fwd_;
  BackwardWeights bww_;
  BackwardData bwd_;
  memory user_w_, user_b_, dst_, diff_src_;
  const memory* bound_src_ = nullptr;
  const memory* bound_diff_dst_ = nullptr;
  bound_args fwd_args_, bww_args_, bwd_args_;
  converter src_, w_, diff_dst_, bww_src_, bww_diff_dst_, bwd_w_, bwd_diff_dst_;
  writeback diff_w_, diff_b_;
  fused_activation act_;
  inner_product_matmul matmul_;
  inner_product_split_backward_data split_bwd_;
  lowered_backward_weights lowered_bww_;
  depthwise_backward_weights depthwise_bww_;
  /// Whether backward weights runs as one of sinew's passes above rather than oneDNN's primitive.
  bool own_bww() const noexcept { return lowered_bww_ || depthwise_bww_; }

 protected:
  /// dense_op's: the fused path for this layer's parameters at `p` (fused_dense_update.hpp says where it is taken).
  void setup_update_in_backward(context& ctx, const ParamSlots& p) {
    if constexpr (kInnerProduct) fused_update_.setup(ctx, fwd_pd_, p, diff_src_, static_cast<bool>(split_bwd_));
  }
};

/// What the convolutions that run as one inner product (small_conv2d.hpp, lowered_conv2d.hpp) share: the product's
/// [rows, Out] output read as the layer's output image, whose layout (NCHW or NHWC) names the same bytes, and the
/// output gradient converted into that image's layout and read back as rows.
class conv_as_inner_product : public weighted_layer<dnnl::inner_product_forward, dnnl::inner_product_backward_data,
                                                    dnnl::inner_product_backward_weights> {
  using base = weighted_layer<dnnl::inner_product_forward, dnnl::inner_product_backward_data,
                              dnnl::inner_product_backward_weights>;

 public:
  desc dst_desc() const { return image_desc_; }
  const memory& dst() const noexcept { return image_; }
  void bind_diff_dst(context& ctx, const desc& d) {
    diff_image_.setup(ctx, d, image_desc_);
    base::bind_diff_dst(ctx, diff_rows_.get_desc());
  }

 protected:
  /// After finish_setup: the output is `image` (the same bytes as the product's rows).
  void set_output_image(context& ctx, const desc& image) {
    image_desc_ = image;
    image_ = memory(image, ctx.engine(), base::dst().get_data_handle());
    diff_rows_ = memory(base::dst_desc(), ctx.engine(), DNNL_MEMORY_NONE);
  }
  /// The output gradient `diff_dst` as the product's rows (converted into the image's layout first if need be).
  const memory& diff_rows(context& ctx, const memory& diff_dst) {
    diff_rows_.set_data_handle(diff_image_(ctx, diff_dst).get_data_handle());
    return diff_rows_;
  }

 private:
  desc image_desc_;
  memory image_, diff_rows_;
  converter diff_image_;
};

}  // namespace sinew::backend::onednn
