// sinew/metrics/traffic.hpp: the memory traffic a training step implies, counted at compile time from a
// network's layers, for reporting a bandwidth-bound net (MobileNetV2's depthwise and 1x1 layers do few
// multiply-adds per value they touch) as a share of the machine's memory bandwidth rather than of its peak flops.
//
//   constexpr double floats = sinew::metrics::forward_activations<Net>;           // per sample
//   const double gbps = sinew::metrics::training_bytes<Net>(batch) / step_seconds / 1e9;
//
// The model, stated so that a reader can disagree with it: every layer's output (activation) is written once and
// read once by the next layer in the forward pass (2 touches); the backward pass reads the saved activation,
// reads the gradient that arrives and writes the gradient it sends (3 touches); each parameter is read by the
// forward and by the backward pass, its gradient written, and the update reads both and writes the parameter
// (6 touches per step, shared by the batch). Floats are 4 bytes. It counts what has to cross between a layer
// and the next when an activation does not stay in the caches: fused layers (a convolution with its batch norm
// and ReLU) touch less, and activations that fit in the last-level cache may never reach memory, so the figure
// is a scale for comparing nets and libraries on the same machine, not a measured count.
#pragma once

#include <cstddef>

#include "sinew/layers/layer_spec.hpp"

namespace sinew::metrics {

/// Floats of every layer's output for one sample (a residual block's inner layers and its sum included).
template <class Net>
inline constexpr double forward_activations = sinew::detail::activations_of(typename Net::template nodes<false>{});

/// Bytes a training step of `batch` samples moves by the model above: 4 x (5 x activations x batch + 6 x
/// parameters).
template <class Net>
constexpr double training_bytes(int batch) noexcept {
  return 4.0 * (5.0 * forward_activations<Net> * batch + 6.0 * double(Net::kParams));
}

/// Bytes a forward pass (inference) of `batch` samples moves: 4 x (2 x activations x batch + parameters).
template <class Net>
constexpr double inference_bytes(int batch) noexcept {
  return 4.0 * (2.0 * forward_activations<Net> * batch + double(Net::kParams));
}

}  // namespace sinew::metrics
