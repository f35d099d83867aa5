// sinew/layers/layer_spec.hpp: what a layer type must provide, and how a network lowers it into nodes.
//
// Contract. A layer spec L is an empty type that describes a layer, independent of any backend:
//   L::kName                         a short name ("conv2d"), used in reports and checkpoints.
//   L::kind                          its kind tag, declared in the layer's own header (`namespace layer_kind {
//                                    struct conv2d {}; }`): what a backend maps to an op with
//                                    backend::op_for<Kind, Backend> (backend/op_table.hpp). Layers that one op
//                                    computes share a tag (MaxPool and AvgPool are layer_kind::pooling). A tag
//                                    derived from layer_kind::plain says that the layer computes itself (below).
//   L::kProfile                      the operator kind its time goes to in metrics::OperatorProfile: a name
//                                    such as "convolution" or "pooling"; its backward pass goes to
//                                    "<kProfile>_backward" (or "_backward_weights" for the kinds that split
//                                    it). A name the profile does not know yet is added at first use.
//   L::template at<In>               the layer applied to input feature shape In. Instantiating it checks
//                                    that the layer fits In (static_asserts that name the layer and the cause)
//                                    and provides:
//       ::output                     the output feature shape;
//       ::kWeights, ::kBias          parameter counts (0 for layers without parameters);
//       ::init(weights, bias, rng)   PyTorch's default initialisation (only when kWeights + kBias > 0);
//       ::kBuffers                   optional: floats of non-trainable state (BatchNorm's running mean and
//                                    variance); absent means 0;
//       ::init_buffers(buffers)      their initial values (only when kBuffers > 0).
//       ::kStateDict                 optional: the layer's tensors as PyTorch's state_dict holds them (names,
//                                    shapes, where they lie); absent means "weight" [kWeights], "bias" [kBias].
//       ::kMacs                      optional: multiply-adds of one sample's forward (metrics/flops.hpp);
//                                    absent means none worth counting (activations, pooling, normalisation).
//       ::kSumsOverWorkers           optional: true when the layer's passes call PlainPass::sum_over_workers, a
//                                    collective (SyncBatchNorm2d); a Trainer then needs a strategy that sums
//                                    over its workers; absent means false;
//       ::forward(PlainPass), ::backward(PlainPass), ::workspace(batch)
//                                    for a kind derived from layer_kind::plain: the layer on plain NCHW floats
//                                    (PlainPass below), which every backend runs (backend/generic/plain_op.hpp);
//                                    workspace(batch) is optional: floats kept from forward to backward.
// Parameters of a layer live in the network's flat buffer as [weights | bias], in PyTorch's layout.
// Buffers live in a second flat array that the Model owns, beside the parameters: they belong to the network,
// not to a plan (the Model keeps one plan per batch size, and all of them must see the same running
// statistics), and the optimizer never touches them. Like parameters, they are a flat span for checkpoints and
// for the distribution strategy (PyTorch's DDP broadcasts them from rank 0).
// Backends implement the layer (see backend/backend_spec.hpp); the spec only says what it computes.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "sinew/core/cross_worker.hpp"
#include "sinew/core/fixed_string.hpp"
#include "sinew/core/rng.hpp"
#include "sinew/core/type_list.hpp"
#include "sinew/tensor/buffer.hpp"
#include "sinew/tensor/shape.hpp"

namespace sinew {

/// The activation slot of a node that has none.
struct NoActivation {
  /// what reports, profiles and checkpoints call the layer kind
  static constexpr std::string_view kName = "none";
};

/// Kind tags live in their layers' headers (`using kind = layer_kind::conv2d;`, layers/conv2d.hpp). A new
/// layer that an existing op computes reuses its tag; a new op gets a new tag in the new layer's header.
namespace layer_kind {
/// Base of the tags of layers that compute themselves on plain NCHW floats (forward and backward of at<In>
/// with a PlainPass): every backend runs them through backend/generic/plain_op.hpp, converting their input and
/// gradients from and to its own layouts, unless it maps the kind to an op of its own. A new layer kind then
/// needs no backend file: `namespace layer_kind { struct group_norm : plain {}; }`.
struct plain {};
/// Declared here because the lowering fuses activations (is_activation_v below); layers/activation.hpp defines it.
struct activation;
}  // namespace layer_kind

/// What a plain layer's forward and backward are given: every tensor plain NCHW floats (PyTorch's layout) for the
/// whole batch, its parameters and buffers in the network's flat buffers.
struct PlainPass {
  int batch = 0;                     ///< samples in src
  bool training = true;              ///< PyTorch's module.train(): false in evaluation mode
  const float* src = nullptr;        ///< the input [batch, In]
  float* dst = nullptr;              ///< forward writes the output [batch, output]
  const float* diff_dst = nullptr;   ///< backward: the output's gradient
  float* diff_src = nullptr;         ///< backward writes the input's gradient; nullptr where none is needed
  const float* weights = nullptr;    ///< kWeights floats
  const float* bias = nullptr;       ///< kBias floats
  float* diff_weights = nullptr;     ///< backward overwrites the weights' gradient
  float* diff_bias = nullptr;        ///< backward overwrites the bias's gradient
  float* buffers = nullptr;          ///< kBuffers floats of non-trainable state
  std::span<float> workspace;        ///< workspace(batch) floats, the same in forward and the backward after it
  /// the sum over every worker of the job (core/cross_worker.hpp), for a layer whose statistics span them
  /// (SyncBatchNorm2d); nullptr: one worker
  const CrossWorkerSum* sum_over_workers = nullptr;
};

namespace req {
template <class L>
concept has_name = requires {
  { L::kName } -> std::convertible_to<std::string_view>;
};
template <class L>
concept has_kind = requires { typename L::kind; };
template <class L>
concept has_profile_kind = requires {
  { L::kProfile } -> std::convertible_to<std::string_view>;
};
template <class L, class In>
concept has_at = requires { typename L::template at<In>; };
/// A plain layer kind's two passes (see layer_kind::plain).
template <class L, class In>
concept has_plain_passes = requires(const PlainPass& p) {
  L::template at<In>::forward(p);
  L::template at<In>::backward(p);
};
template <class L>
concept is_plain_kind = requires { typename L::kind; } && std::derived_from<typename L::kind, layer_kind::plain>;
template <class L, class In>
concept has_output_shape = requires { typename L::template at<In>::output; } &&
                           FeatureShape<typename L::template at<In>::output>;
template <class L, class In>
concept has_layer_param_counts = requires {
  { L::template at<In>::kWeights } -> std::convertible_to<std::size_t>;
  { L::template at<In>::kBias } -> std::convertible_to<std::size_t>;
};
}  // namespace req

/// The layer contract, checked where a network lowers a layer (Node below): one sentence per missing member,
/// as ensmallen's static checks give, instead of an error deep inside a backend. `value` is true when the
/// spec is complete.
template <class L, class In>
struct check_layer {
  static_assert(req::has_name<L>,
                "a layer spec must declare `static constexpr std::string_view kName` (a short name for reports and "
                "checkpoints); the contract is in layers/layer_spec.hpp");
  static_assert(req::has_kind<L>,
                "a layer spec must declare `using kind = layer_kind::...;` (the tag a backend maps to the op that "
                "computes it); the contract is in layers/layer_spec.hpp");
  static_assert(req::has_profile_kind<L>,
                "a layer spec must declare `static constexpr std::string_view kProfile`, the operator kind its time "
                "goes to in metrics::OperatorProfile (\"convolution\", \"pooling\", \"relu\", ...); the contract is "
                "in layers/layer_spec.hpp");
  static_assert(req::has_at<L, In>,
                "a layer spec must provide `template <FeatureShape In> struct at`, the layer applied to an input "
                "shape; the contract is in layers/layer_spec.hpp");
  static_assert(!req::has_at<L, In> || req::has_output_shape<L, In>,
                "a layer spec's at<In> must declare `using output = Shape<C, H, W>` (or Flat<N>), its output shape");
  static_assert(!req::has_at<L, In> || req::has_layer_param_counts<L, In>,
                "a layer spec's at<In> must declare `static constexpr std::size_t kWeights` and `kBias` (0 for a "
                "layer without parameters)");
  static_assert(!req::is_plain_kind<L> || !req::has_at<L, In> || req::has_plain_passes<L, In>,
                "a layer whose kind derives from layer_kind::plain must compute itself: its at<In> declares "
                "`static void forward(const PlainPass&)` and `static void backward(const PlainPass&)`");
  /// true when L fulfils the contract (otherwise a static_assert above has said why)
  static constexpr bool value = req::has_name<L> && req::has_kind<L> && req::has_profile_kind<L> &&
                                req::has_output_shape<L, In> && req::has_layer_param_counts<L, In> &&
                                (!req::is_plain_kind<L> || req::has_plain_passes<L, In>);
};

/// A layer spec that can be applied to input shape In (without the sentences: for overloads and requires).
template <class L, class In>
concept LayerFor = req::has_name<L> && req::has_kind<L> && req::has_profile_kind<L> && req::has_output_shape<L, In> &&
                   req::has_layer_param_counts<L, In>;

/// Element-wise activations: a Conv2d or Dense followed by one may be fused into a single node.
template <class L>
inline constexpr bool is_activation_v = requires { requires std::same_as<typename L::kind, layer_kind::activation>; };

namespace detail {
/// A layer's buffer count: its ::kBuffers, or 0 for the many layers that have none.
template <class Applied>
constexpr std::size_t buffers_of() {
  if constexpr (requires { Applied::kBuffers; })
    return Applied::kBuffers;
  else
    return 0;
}
/// Whether a layer's passes sum over the workers: its ::kSumsOverWorkers, or false.
template <class Applied>
constexpr bool sums_over_workers_of() {
  if constexpr (requires { Applied::kSumsOverWorkers; })
    return bool(Applied::kSumsOverWorkers);
  else
    return false;
}
/// Whether any of lowered nodes (a network's, a residual branch's) sums over the workers.
template <class... Nodes>
constexpr bool sums_over_workers_of(type_list<Nodes...>) {
  return (false || ... || sums_over_workers_of<typename Nodes::applied>());
}
/// A layer's multiply-adds per sample: its ::kMacs, or 0.
template <class Applied>
constexpr double macs_of() {
  if constexpr (requires { Applied::kMacs; })
    return double(Applied::kMacs);
  else
    return 0.0;
}
/// The multiply-adds of lowered nodes (a network's, a residual branch's).
template <class... Nodes>
constexpr double macs_of(type_list<Nodes...>) {
  return (0.0 + ... + macs_of<typename Nodes::applied>());
}
/// A layer's output floats per sample, and a composite layer's (Residual) every inner output too: its
/// ::kActivations where it declares them, else its output's size. metrics/traffic.hpp sums them.
template <class Applied>
constexpr double activations_of() {
  if constexpr (requires { Applied::kActivations; })
    return double(Applied::kActivations);
  else
    return double(Applied::output::kSize);
}
/// The output floats of lowered nodes (a network's, a residual branch's).
template <class... Nodes>
constexpr double activations_of(type_list<Nodes...>) {
  return (0.0 + ... + activations_of<typename Nodes::applied>());
}
/// Floats a layer occupies in the flat parameter buffer: a composite layer (Residual) declares its own
/// ::kParamSpan, since its sub-layers each start aligned; any other layer takes its count, rounded up.
template <class Applied, std::size_t Params>
constexpr std::size_t param_span_of() {
  if constexpr (requires { Applied::kParamSpan; })
    return Applied::kParamSpan;
  else
    return align_floats(Params);
}
template <class Applied, std::size_t Buffers>
constexpr std::size_t buffer_span_of() {
  if constexpr (requires { Applied::kBufferSpan; })
    return Applied::kBufferSpan;
  else
    return align_floats(Buffers);
}
}  // namespace detail

/// A run of layers spliced into the enclosing list: Sequential<Input<...>, Chain<A, B>, C> is
/// Sequential<Input<...>, A, B, C>. Repeated blocks are alias templates of Chains (as dlib writes its
/// ResNets); a Residual takes Chains as its branches.
template <class... Layers>
struct Chain {};

/// PyTorch's names for a network's tensors (its state_dict keys, "layer1.0.conv1.weight") come from the
/// network's layer list. Inside a module, a layer is named by its position among the module's layers, as
/// torch.nn.Sequential numbers its children (every layer counts: ReLU, MaxPool, Dropout, Flatten; a Chain's
/// layers count one by one). Two wrappers give other names; both are spliced into the list like a Chain and
/// change nothing but names:
///   Named<"fc", Dense<10>>              the layer is the submodule "fc": fc.weight, fc.bias;
///   Module<"features", Layers...>       the layers form the submodule "features", numbered from 0 inside it:
///                                       features.0.weight; Module<"", ...> is named by its position, as a
///                                       block in a torch.nn.Sequential stage ("layer1.0.").
/// A Residual adds no name: its branches' layers are named inside the module that holds the Residual.
template <fixed_string Name, class Layer>
struct Named {};
template <fixed_string Name, class... Layers>
struct Module {};

/// Where one state_dict tensor of a layer lies: in its weights, its bias, its buffers, or PyTorch's
/// num_batches_tracked counter (an int64 scalar that sinew does not store; see io/safetensors.hpp).
enum class StateSource { weights, bias, buffers, batches_tracked };

/// One tensor of a layer's state_dict: the last component of its key, where it lies, and its shape.
struct StateTensor {
  std::string_view name;                   ///< "weight", "running_mean", ...
  /// which of the layer's slices it lies in
  StateSource source = StateSource::weights;
  std::size_t offset = 0;                  ///< floats from the start of the source's slice
  int rank = 1;                            ///< 0 for a scalar
  std::array<std::int64_t, 4> extents{};   ///< PyTorch's shape, outermost first

  /// Elements: the product of the extents (1 for a scalar).
  constexpr std::size_t size() const noexcept {
    std::size_t n = 1;
    for (int d = 0; d < rank; ++d) n *= std::size_t(extents[std::size_t(d)]);
    return n;
  }
};

/// One step of a lowered network: layer L applied to In, optionally followed by a fused activation Act.
/// kParamOffset is where its [weights | bias] start in the flat parameter buffer, kBufferOffset where its
/// buffers start in the flat buffer array (both 64-byte aligned).
template <class L, FeatureShape In, class Act, std::size_t ParamOffset, std::size_t Index,
          std::size_t BufferOffset = 0>
struct Node {
  static_assert(check_layer<L, In>::value, "the layer above does not fulfil the layer contract");
  /// L
  using layer = L;
  /// L::at<In>: the layer at this input
  using applied = typename L::template at<In>;
  /// In
  using input = In;
  /// the shape it produces
  using output = typename applied::output;
  /// the fused activation, or NoActivation
  using activation = Act;
  /// trainable weights (floats)
  static constexpr std::size_t kWeights = applied::kWeights;
  /// trainable biases (floats)
  static constexpr std::size_t kBias = applied::kBias;
  /// kWeights + kBias
  static constexpr std::size_t kParams = kWeights + kBias;
  /// where its parameters start in the flat buffer
  static constexpr std::size_t kParamOffset = ParamOffset;
  /// Space the node takes in the flat buffer: its parameters, padded so the next layer starts aligned.
  static constexpr std::size_t kParamSpan = detail::param_span_of<applied, kParams>();
  static constexpr std::size_t kIndex = Index;  ///< position of L in the network's layer list
  /// floats of non-trainable state (BatchNorm's running statistics)
  static constexpr std::size_t kBuffers = detail::buffers_of<applied>();
  /// where its buffers start in the flat buffer array
  static constexpr std::size_t kBufferOffset = BufferOffset;
  /// space its buffers take, padded so the next start aligned
  static constexpr std::size_t kBufferSpan = detail::buffer_span_of<applied, kBuffers>();
  /// whether its passes sum over the workers (SyncBatchNorm2d, or a Residual holding one)
  static constexpr bool kSumsOverWorkers = detail::sums_over_workers_of<applied>();
};

template <class T>
inline constexpr bool is_node_v = false;
template <class L, class In, class Act, std::size_t O, std::size_t I, std::size_t B>
inline constexpr bool is_node_v<Node<L, In, Act, O, I, B>> = true;

/// Satisfied by Node<...>.
template <class T>
concept NodeType = is_node_v<T>;

namespace detail {
/// PyTorch's default for Conv2d and Linear: kaiming_uniform(a = sqrt(5)) weights and uniform bias,
/// which both come to U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
inline void init_fan_in_uniform(std::span<float> weights, std::span<float> bias, std::size_t fan_in, Rng& rng) {
  const float bound = 1.0f / std::sqrt(float(fan_in));
  for (float& w : weights) w = rng.uniform(-bound, bound);
  for (float& b : bias) b = rng.uniform(-bound, bound);
}
}  // namespace detail

}  // namespace sinew

#include <cmath>
