// sinew/backend/onednn.hpp: the OneDnn backend, computing every layer with oneDNN primitives
// (the way PyTorch and MXNet do on CPUs).
#pragma once

#include "sinew/backend/backend_spec.hpp"
#include "sinew/backend/generic/residual.hpp"
#include "sinew/backend/onednn/activation.hpp"
#include "sinew/backend/onednn/adaptive_pooling.hpp"
#include "sinew/backend/onednn/batch_norm.hpp"
#include "sinew/backend/onednn/common.hpp"
#include "sinew/backend/onednn/conv2d.hpp"
#include "sinew/backend/onednn/dense.hpp"
#include "sinew/backend/onednn/dropout.hpp"
#include "sinew/backend/onednn/flatten.hpp"
#include "sinew/backend/onednn/pooling.hpp"
#include "sinew/backend/onednn/small_conv2d.hpp"
#include "sinew/core/diagnostics.hpp"

namespace sinew::backend {

struct OneDnn;

namespace onednn {
/// impl<Layer>::type is the op class that computes Layer; a composite layer (Residual) gives
/// impl<Layer>::type_for<Node> instead, since its op holds the ops of its branches.
template <class Layer>
struct impl {
  static_assert(dependent_false<Layer>,
                "the OneDnn backend has no implementation of this layer kind; add one under backend/onednn/ "
                "and map it in backend/onednn.hpp (the contract is in backend/backend_spec.hpp)");
};
template <int O, int K, int S, int P, bool B>
struct impl<Conv2d<O, K, S, P, B>> {
  using type = conv2d_op;
};
template <int O, bool B>
struct impl<Dense<O, B>> {
  using type = dense_op;
};
template <int K, int S, int P>
struct impl<MaxPool<K, S, P>> {
  using type = pooling_op;
};
template <int K, int S, int P>
struct impl<AvgPool<K, S, P>> {
  using type = pooling_op;
};
template <>
struct impl<ReLU> {
  using type = activation_op;
};
template <>
struct impl<Tanh> {
  using type = activation_op;
};
template <>
struct impl<Sigmoid> {
  using type = activation_op;
};
template <>
struct impl<Flatten> {
  using type = flatten_op;
};
template <>
struct impl<BatchNorm2d> {
  using type = batch_norm_op;
};
template <int P>
struct impl<Dropout<P>> {
  using type = dropout_op;
};
template <int OH, int OW>
struct impl<AdaptiveAvgPool<OH, OW>> {
  using type = adaptive_pool_op;
};
template <>
struct impl<GlobalAvgPool> {
  using type = adaptive_pool_op;
};
template <class M, class S>
struct impl<Residual<M, S>> {
  static constexpr bool kComposite = true;
  template <class N>
  using type_for = generic::residual_op<OneDnn, N>;
};

template <class N>
struct op_of {
  using type = typename impl<typename N::layer>::type;
};
template <class N>
  requires requires { impl<typename N::layer>::kComposite; }
struct op_of<N> {
  using type = typename impl<typename N::layer>::template type_for<N>;
};
/// A convolution over an image no larger than its kernel runs as one inner product (small_conv2d.hpp).
template <class L>
inline constexpr bool is_conv2d = false;
template <int O, int K, int S, int P, bool B>
inline constexpr bool is_conv2d<Conv2d<O, K, S, P, B>> = true;
template <class N>
  requires(is_conv2d<typename N::layer> &&
           conv_is_small_image(N::input::kHeight, N::input::kWidth, N::output::kHeight, N::output::kWidth,
                               N::layer::kKernel))
struct op_of<N> {
  using type = small_conv2d_op;
};
}  // namespace onednn

/// oneDNN primitives in the layouts they choose, activations fused into the layer before them.
struct OneDnn {
  /// The Backend contract: backend/backend_spec.hpp says what each member does.
  /// @{
  static constexpr std::string_view kName = "onednn";
  static constexpr bool kFuseActivations = true;

  using context = onednn::context;
  using tensor = dnnl::memory;
  using tensor_desc = dnnl::memory::desc;
  using external = onednn::external;
  using converter = onednn::converter;

  static tensor_desc plain_desc(int n, int c, int h, int w) { return onednn::plain_desc(n, c, h, w); }
  static tensor_desc plain_like(const tensor_desc& d) { return onednn::plain_like(d); }
  static void to_plain(context& ctx, const tensor& t, float* out) { onednn::to_plain(ctx, t, out); }
  static float* data(const tensor& t) { return static_cast<float*>(t.get_data_handle()); }

  using adder = onednn::adder;

  template <NodeType N>
  using op = typename onednn::op_of<N>::type;
  /// @}
};

static_assert(Backend<OneDnn>);

}  // namespace sinew::backend
