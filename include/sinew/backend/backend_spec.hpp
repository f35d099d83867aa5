// sinew/backend/backend_spec.hpp: the contract every backend (OneDnn, Eigen) fulfils.
//
// A backend B is an empty policy type. The Model builds one *plan* per batch size from it, with every
// primitive and buffer created at set-up; a training step then only executes.
//
//   B::kName                  "onednn", "eigen": for reports.
//   B::kFuseActivations       whether a Conv2d/Dense and the activation after it run as one node.
//   B::context                per-model runtime state (thread pool, engine, stream). Constructed from
//                             BackendOptions; not copyable; must outlive every plan built from it.
//   B::tensor                 an activation as exchanged between ops; its layout is the backend's business.
//   B::tensor_desc            describes a tensor (shape and layout); comparable with ==.
//   B::plain_desc(N, C, H, W) the descriptor of plain NCHW floats;
//   B::plain_like(d)          the plain (row-major) layout of d's dimensions.
//   B::external               binds caller-owned plain floats as a tensor without copying:
//                               setup(ctx, plain_desc); bind(float*) -> const tensor&; desc().
//   B::converter              moves a tensor into another layout, or passes it through when equal:
//                               setup(ctx, from_desc, to_desc); operator()(ctx, const tensor&) -> const tensor&.
//   B::to_plain(ctx, t, out)  copies tensor t (any layout) into plain NCHW floats (for checks and tests).
//   B::data(t)                the floats of a tensor in plain layout.
//   B::template op<Node>      the implementation of one lowered node (see layers/layer_spec.hpp): op_of<B, Node>,
//                             the op_for<Kind, B> table of backend/op_table.hpp, which the backend fills
//                             beside each op for the kind tags its layers declare; the op has a
//     default constructor, then
//     template <NodeType N> setup(ctx, src_desc, batch, ParamSlots, need_diff_src)
//                             creates primitives for input layout src_desc; ParamSlots points into the
//                             network's flat parameter and gradient buffers (PyTorch layout) and, for a
//                             layer with N::kBuffers > 0, into the Model's flat buffer array;
//     dst_desc(), dst()       the output (valid after forward);
//     diff_src_desc()         the layout backward writes the input gradient in;
//     bind_diff_dst(ctx, d)   the layout the output gradient will arrive in (called once, after setup);
//     forward(ctx, src)       computes dst from src and the parameters;
//     backward(ctx, src, diff_dst)
//                             overwrites the parameter gradients, and diff_src() when need_diff_src;
//                             differentiates the function that the last forward() computed (in its mode);
//     set_mode(ForwardMode)   optional, for ops whose forward depends on the mode (BatchNorm, Dropout) or
//                             that derive a copy of their weights each forward (a reorder into the kernel's
//                             layout), which ForwardMode::weights_unchanged lets them reuse in evaluation:
//                             called before each forward(); ops without it are mode-independent. In
//                             training mode an op may update its layer's buffers (running statistics).
//   B::adder                  (for Residual) dst = a + b for two tensors whose layouts may differ:
//                               setup(ctx, desc_a, desc_b); run(ctx, a, b); dst(), dst_desc() in a's layout.
//   A layer kind that a backend lacks fails to compile at op_for's trap, with a sentence.
//   Composite layers (Residual) are generic: backend/generic/residual.hpp runs their branches with the
//   backend's own ops and fills op_for<layer_kind::residual, B> for every backend. So is the node the lowering
//   makes of an enlarging adaptive pool, Flatten and Dense: backend/generic/pooled_dense.hpp folds the Dense's
//   matrix and runs the backend's own Flatten and Dense on it; and the node of a Conv2d, its activation and a
//   non-overlapping AvgPool: backend/generic/pooled_conv.hpp runs the backend's convolution and pooling ops one
//   after the other, unless the backend maps layer_kind::pooled_conv itself. A layer that computes itself
//   (a kind derived from layer_kind::plain) runs on every backend through backend/generic/plain_op.hpp.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "sinew/core/in_backward_update.hpp"
#include "sinew/layers.hpp"

namespace sinew {

/// Runtime options shared by every backend.
struct BackendOptions {
  int threads = 0;  ///< worker threads; 0 = the OMP_NUM_THREADS / hardware default
  /// CPU ids to bind the worker threads to, thread i to cpus[i % size] (the calling thread is left as it is);
  /// empty: not bound. Trainer fills it from its core plan (core/affinity.hpp).
  std::vector<int> cpus = {};
};

/// Where a node's parameters and their gradients live inside the network's flat buffers.
struct ParamSlots {
  /// the node's weights, PyTorch layout
  float* weights = nullptr;
  /// its biases (nullptr without)
  float* bias = nullptr;
  /// where backward writes the weights' gradient
  float* diff_weights = nullptr;
  /// where backward writes the biases' gradient
  float* diff_bias = nullptr;
  float* buffers = nullptr;  ///< the layer's kBuffers floats of non-trainable state (running statistics)
  /// the Model's sum over the workers (core/cross_worker.hpp), for the layers that need one (SyncBatchNorm2d)
  const CrossWorkerSum* sum_over_workers = nullptr;
  /// the Model's update inside backward (core/in_backward_update.hpp), for the ops that can apply it (OneDnn's
  /// large fully connected layers); one that does leaves its gradients unwritten when it is armed
  const InBackwardUpdate* update_in_backward = nullptr;
};

/// How the next forward() runs: PyTorch's module.train() / module.eval(), and the randomness of this step.
struct ForwardMode {
  bool training = true;    ///< batch statistics and dropout; false: running statistics, dropout is identity
  std::uint64_t seed = 0;  ///< distinct per node and per training step, fixed by the model seed
  /// The parameters are those the op saw at its last forward, which ran in evaluation mode too: what it derived
  /// from its weights then (a reordered or transposed copy) still holds, so it may skip deriving it again. The
  /// Model sets it (see Model::parameters_changed); backend/generic/weight_cache.hpp keeps the op's side.
  bool weights_unchanged = false;
};

namespace backend::example {
using conv_node = Node<Conv2d<4, 3>, Shape<2, 8, 8>, ReLU, 0, 0>;
using dense_node = Node<Dense<5>, Flat<16>, NoActivation, 0, 0>;
using pool_node = Node<MaxPool<2>, Shape<2, 8, 8>, NoActivation, 0, 0>;
using act_node = Node<Tanh, Shape<2, 8, 8>, NoActivation, 0, 0>;
using flatten_node = Node<Flatten, Shape<2, 8, 8>, NoActivation, 0, 0>;
}  // namespace backend::example

namespace req {
template <class B>
concept has_backend_traits = requires {
  { B::kName } -> std::convertible_to<std::string_view>;
  { B::kFuseActivations } -> std::convertible_to<bool>;
};
template <class B>
concept has_context = std::constructible_from<typename B::context, BackendOptions>;
template <class B>
concept has_tensors = requires(typename B::context& ctx, const typename B::tensor& t, typename B::external& e,
                               typename B::converter& c, float* p) {
  { e.setup(ctx, B::plain_desc(1, 1, 1, 1)) };
  { B::plain_like(B::plain_desc(1, 1, 1, 1)) } -> std::convertible_to<typename B::tensor_desc>;
  { e.bind(p) } -> std::convertible_to<const typename B::tensor&>;
  { e.desc() } -> std::convertible_to<typename B::tensor_desc>;
  { c(ctx, t) } -> std::convertible_to<const typename B::tensor&>;
  { B::to_plain(ctx, t, p) };
  { B::data(t) } -> std::convertible_to<float*>;
};
template <class B, class N>
concept has_op = requires(typename B::template op<N>& op, typename B::context& ctx, const typename B::tensor& t,
                          const typename B::tensor_desc& d) {
  { op.template setup<N>(ctx, d, 1, ParamSlots{}, true) };
  { op.dst_desc() } -> std::convertible_to<typename B::tensor_desc>;
  { op.dst() } -> std::convertible_to<const typename B::tensor&>;
  { op.diff_src_desc() } -> std::convertible_to<typename B::tensor_desc>;
  { op.bind_diff_dst(ctx, d) };
  { op.forward(ctx, t) };
  { op.backward(ctx, t, t) };
  { op.diff_src() } -> std::convertible_to<const typename B::tensor&>;
};
/// The optional mode hook of an op (see set_mode in the contract above).
template <class Op>
concept has_mode = requires(Op& op, const ForwardMode& m) { op.set_mode(m); };
template <class B>
concept has_core_ops = has_op<B, backend::example::conv_node> && has_op<B, backend::example::dense_node> &&
                       has_op<B, backend::example::pool_node> && has_op<B, backend::example::act_node> &&
                       has_op<B, backend::example::flatten_node>;
}  // namespace req

/// A backend policy: computes every layer of sinew's core set.
template <class B>
concept BackendPolicy = req::has_backend_traits<B> && req::has_context<B> && req::has_tensors<B> && req::has_core_ops<B>;

}  // namespace sinew
