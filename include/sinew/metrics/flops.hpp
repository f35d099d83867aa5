// sinew/metrics/flops.hpp: the multiply-adds of a network's forward pass, counted at compile time from its
// layers, for reporting a run as GFLOP/s and as a share of the machine's peak.
//
//   constexpr double macs = sinew::metrics::forward_macs<Net>;     // per sample
//   const double gflops = sinew::metrics::training_flops<Net>(batch) / step_seconds / 1e9;
//
// What counts. A convolution's out_c x out_h x out_w x in_c x K x K, an inner product's inputs x outputs, and a
// residual block's branches (its projection too). Batch norm, activations, pooling, dropout and the residual
// sums are left out, as the usual counts of CNNs leave them (torchvision's documented 1.81 GFLOPS of ResNet-18
// at 224x224 are its convolutions' and classifier's multiply-adds): they are a few operations per value where
// convolutions are hundreds. A training step is 3 times the forward's products (forward, backward data, backward
// weights) at 2 flops each: 6 x MACs x batch, the usual estimate of a step's work (it includes the first layer's
// backward data, which is not computed).
#pragma once

#include <cstddef>
#include <type_traits>

#include "sinew/core/type_list.hpp"
#include "sinew/layers/layer_spec.hpp"

namespace sinew::metrics {

namespace detail {
template <class Node>
constexpr double node_macs() noexcept;

template <class... Nodes>
constexpr double macs_of(type_list<Nodes...>) noexcept {
  return (0.0 + ... + node_macs<Nodes>());
}

template <class Node>
constexpr double node_macs() noexcept {
  using L = typename Node::layer;
  using In = typename Node::input;
  using Out = typename Node::output;
  if constexpr (std::is_same_v<typename L::kind, layer_kind::conv2d>) {
    return double(Out::kChannels) * Out::kHeight * Out::kWidth * In::kChannels * L::kKernel * L::kKernel;
  } else if constexpr (std::is_same_v<typename L::kind, layer_kind::dense>) {
    return double(In::kSize) * Out::kSize;
  } else if constexpr (std::is_same_v<typename L::kind, layer_kind::residual>) {
    using A = typename Node::applied;
    return macs_of(typename A::template main_nodes<false>{}) + macs_of(typename A::template shortcut_nodes<false>{});
  } else {
    return 0.0;
  }
}
}  // namespace detail

/// Multiply-adds of Net's forward pass for one sample (convolutions, inner products, residual branches).
template <class Net>
inline constexpr double forward_macs = detail::macs_of(typename Net::template nodes<false>{});

/// Flops of `batch` samples' training step: 6 x forward_macs x batch (forward, backward data and backward
/// weights, 2 flops a multiply-add).
template <class Net>
constexpr double training_flops(int batch) noexcept {
  return 6.0 * forward_macs<Net> * batch;
}

/// Flops of `batch` samples' forward pass (inference): 2 x forward_macs x batch.
template <class Net>
constexpr double inference_flops(int batch) noexcept {
  return 2.0 * forward_macs<Net> * batch;
}

}  // namespace sinew::metrics
