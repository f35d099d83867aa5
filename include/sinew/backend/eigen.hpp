// sinew/backend/eigen.hpp: the Eigen backend, computing every layer with Eigen Tensor expressions on an
// Eigen thread pool (the way TensorFlow does on CPUs): convolutions as extract_image_patches + reshape +
// contract, NHWC between ops, activations fused into the Conv2d, Dense or BatchNorm2d before them.
//
// Fusion. kFuseActivations is true, as for OneDnn, so both backends lower a network to the same nodes (ops
// and per-op profiles line up one to one) and the activation runs in the same pass as the bias add, while
// the layer's output is still in cache, instead of a separate op re-reading it.
#pragma once

#include "sinew/backend/eigen/common.hpp"  // first: defines EIGEN_USE_THREADS before the Tensor module
#include "sinew/backend/backend_spec.hpp"
#include "sinew/backend/eigen/activation.hpp"
#include "sinew/backend/eigen/adaptive_pooling.hpp"
#include "sinew/backend/eigen/adder.hpp"
#include "sinew/backend/eigen/batch_norm.hpp"
#include "sinew/backend/eigen/conv2d.hpp"
#include "sinew/backend/eigen/dense.hpp"
#include "sinew/backend/eigen/dropout.hpp"
#include "sinew/backend/eigen/flatten.hpp"
#include "sinew/backend/eigen/pooling.hpp"
#include "sinew/backend/generic/residual.hpp"
#include "sinew/core/diagnostics.hpp"

namespace sinew::backend {

struct Eigen;

namespace eigen {
/// impl<Layer>::type is the op class that computes Layer; a composite layer (Residual) gives
/// impl<Layer>::type_for<Node> instead, since its op holds the ops of its branches.
template <class Layer>
struct impl {
  static_assert(dependent_false<Layer>,
                "the Eigen backend has no implementation of this layer kind; add one under backend/eigen/ "
                "and map it in backend/eigen.hpp (the contract is in backend/backend_spec.hpp), or use "
                "backend::OneDnn for this network");
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
  using type_for = generic::residual_op<Eigen, N>;
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
}  // namespace eigen

/// Eigen Tensor expressions on an Eigen::ThreadPoolDevice, NHWC inside, activations fused.
struct Eigen {
  /// The Backend contract: backend/backend_spec.hpp says what each member does.
  /// @{
  static constexpr std::string_view kName = "eigen";
  static constexpr bool kFuseActivations = true;

  using context = eigen::context;
  using tensor = eigen::tensor;
  using tensor_desc = eigen::tensor_desc;
  using external = eigen::external;
  using converter = eigen::converter;

  static tensor_desc plain_desc(int n, int c, int h, int w) { return eigen::plain_desc(n, c, h, w); }
  static tensor_desc plain_like(const tensor_desc& d) { return eigen::plain_like(d); }
  static void to_plain(context& ctx, const tensor& t, float* out) { eigen::to_plain(ctx, t, out); }
  static float* data(const tensor& t) { return t.data; }

  using adder = eigen::adder;

  template <NodeType N>
  using op = typename eigen::op_of<N>::type;
  /// @}
};

static_assert(Backend<Eigen>);

}  // namespace sinew::backend
