// sinew/layers/residual.hpp: residual blocks, output = main(x) + shortcut(x) (He et al. 2016).
//
//   using basic = Residual<Chain<Conv2d<64, 3, 1, 1, false>, BatchNorm2d, ReLU,
//                                Conv2d<64, 3, 1, 1, false>, BatchNorm2d>,
//                          ProjectIfNeeded<64, 1>>;            // then a ReLU after the block
//
// Both branches are Chains of layers, lowered like a network of their own; their parameters and buffers
// lie in the block's slice of the flat buffers, main branch first. ProjectIfNeeded<C, Stride> is the
// torchvision shortcut: the identity when the block keeps the shape, else a strided 1x1 Conv2d + BatchNorm2d.
#pragma once

#include <span>
#include <type_traits>

#include "sinew/core/diagnostics.hpp"
#include "sinew/layers/batch_norm.hpp"
#include "sinew/layers/conv2d.hpp"
#include "sinew/layers/layer_spec.hpp"
#include "sinew/layers/detail/lower.hpp"

namespace sinew {

/// This header's kind, what backends map to an op (backend/op_table.hpp): a composite, which
/// backend/generic/residual.hpp computes with the backend's own ops.
namespace layer_kind {
struct residual {};
}  // namespace layer_kind

/// The shortcut of torchvision's ResNets: identity if the input already has C channels and Stride is 1,
/// else Conv2d<C, 1, Stride, 0, no bias> followed by BatchNorm2d, named as torchvision's (downsample.0, .1).
template <int C, int Stride = 1>
struct ProjectIfNeeded {};

namespace detail {
template <class Shortcut, class In>
struct resolve_shortcut {
  using type = Shortcut;
};
template <int C, int Stride, class In>
struct resolve_shortcut<ProjectIfNeeded<C, Stride>, In> {
  using type = std::conditional_t<In::kChannels == C && Stride == 1, Chain<>,
                                  Chain<Module<"downsample", Conv2d<C, 1, Stride, 0, false>, BatchNorm2d>>>;
};

template <class Branch, class In, std::size_t Offset, std::size_t BufferOffset, bool Fuse>
struct lower_branch {
  static_assert(dependent_false<Branch>, "Residual: each branch must be a Chain<Layers...> (Chain<> is the identity)");
};
template <class... L, class In, std::size_t Offset, std::size_t BufferOffset, bool Fuse>
struct lower_branch<Chain<L...>, In, Offset, BufferOffset, Fuse> : lower<In, Offset, BufferOffset, 0, Fuse, L...> {};

/// Initialises the parameters of lowered nodes whose offsets are relative to `params`, as the Model does.
template <class... N>
void init_lowered_params(type_list<N...>, [[maybe_unused]] float* params, [[maybe_unused]] Rng& rng) {
  (
      [&] {
        if constexpr (N::kParams > 0) {
          float* w = params + N::kParamOffset;
          N::applied::init({w, N::kWeights}, {w + N::kWeights, N::kBias}, rng);
        }
      }(),
      ...);
}
/// Initialises the buffers (running statistics) of lowered nodes whose offsets are relative to `buffers`.
template <class... N>
void init_lowered_buffers(type_list<N...>, [[maybe_unused]] float* buffers) {
  (
      [&] {
        if constexpr (N::kBuffers > 0) N::applied::init_buffers({buffers + N::kBufferOffset, N::kBuffers});
      }(),
      ...);
}
}  // namespace detail

/// Residual<Main, Shortcut = Chain<>>: main(x) + shortcut(x). Follow it with ReLU as ResNets do.
template <class Main, class Shortcut = Chain<>>
struct Residual {
  /// what reports, profiles and checkpoints call the layer kind
  static constexpr std::string_view kName = "residual";
  /// its row in the one layer-to-op table (backend/op_table.hpp)
  using kind = layer_kind::residual;
  /// the operator-profile kind its time is reported under (metrics/profile.hpp)
  static constexpr std::string_view kProfile = "add";  ///< the sums; each branch op goes to its own kind

  /// The layer applied to an input of shape In (the contract is in layers/layer_spec.hpp).
  template <FeatureShape In>
  struct at {
    /// the shortcut branch as a Chain (ProjectIfNeeded resolved for In)
    using shortcut = typename detail::resolve_shortcut<Shortcut, In>::type;
    /// The main branch lowered at In (Fuse: with activations fused).
    template <bool Fuse>
    using main_lowered = detail::lower_branch<Main, In, 0, 0, Fuse>;
    /// The shortcut lowered after it.
    template <bool Fuse>
    using shortcut_lowered =
        detail::lower_branch<shortcut, In, main_lowered<Fuse>::kEnd, main_lowered<Fuse>::kBufferEnd, Fuse>;
    /// The branches' nodes, offsets relative to the block's start in the flat buffers.
    template <bool Fuse>
    using main_nodes = typename main_lowered<Fuse>::type;
    /// The shortcut's nodes.
    template <bool Fuse>
    using shortcut_nodes = typename shortcut_lowered<Fuse>::type;

    static_assert(std::is_same_v<typename main_lowered<false>::output, typename shortcut_lowered<false>::output>,
                  "Residual: the main branch and the shortcut produce different shapes; give the shortcut a "
                  "projection that matches (ProjectIfNeeded<C, Stride>, or Chain<Conv2d<C, 1, Stride, 0, false>, "
                  "BatchNorm2d>)");
    /// the shape of the output for one sample
    using output = typename main_lowered<false>::output;

    /// trainable parameters of both branches (all counted as weights)
    static constexpr std::size_t kWeights = detail::param_count<main_nodes<false>>::value +
                                            detail::param_count<shortcut_nodes<false>>::value;
    /// none of its own
    static constexpr std::size_t kBias = 0;
    /// floats the block takes in the flat parameter buffer
    static constexpr std::size_t kParamSpan = shortcut_lowered<false>::kEnd;
    /// non-trainable floats of both branches
    static constexpr std::size_t kBuffers = detail::param_count<main_nodes<false>>::buffers +
                                            detail::param_count<shortcut_nodes<false>>::buffers;
    /// floats the block takes in the flat buffer array
    static constexpr std::size_t kBufferSpan = shortcut_lowered<false>::kBufferEnd;
    /// whether a layer of either branch sums over the workers (SyncBatchNorm2d)
    static constexpr bool kSumsOverWorkers = sinew::detail::sums_over_workers_of(main_nodes<false>{}) ||
                                             sinew::detail::sums_over_workers_of(shortcut_nodes<false>{});
    /// multiply-adds per sample: both branches' (the sum is not counted, see metrics/flops.hpp)
    static constexpr double kMacs = sinew::detail::macs_of(main_nodes<false>{}) +
                                    sinew::detail::macs_of(shortcut_nodes<false>{});

    /// output floats per sample: both branches' layers' and the sum's (see metrics/traffic.hpp)
    static constexpr double kActivations = sinew::detail::activations_of(main_nodes<false>{}) +
                                           sinew::detail::activations_of(shortcut_nodes<false>{}) +
                                           double(output::kSize);

    /// `weights` starts the block's slice (kParamSpan floats, sub-layers aligned inside it).
    static void init(std::span<float> weights, std::span<float>, Rng& rng) {
      detail::init_lowered_params(main_nodes<false>{}, weights.data(), rng);
      detail::init_lowered_params(shortcut_nodes<false>{}, weights.data(), rng);
    }
    /// `buffers` starts the block's slice of the buffer array (kBufferSpan floats).
    static void init_buffers(std::span<float> buffers) {
      detail::init_lowered_buffers(main_nodes<false>{}, buffers.data());
      detail::init_lowered_buffers(shortcut_nodes<false>{}, buffers.data());
    }
  };
};

}  // namespace sinew
