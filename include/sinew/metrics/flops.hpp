// sinew/metrics/flops.hpp: the multiply-adds of a network's forward pass, counted at compile time from its
// layers, for reporting a run as GFLOP/s and as a share of the machine's peak.
//
//   constexpr double macs = sinew::metrics::forward_macs<Net>;     // per sample
//   const double gflops = sinew::metrics::training_flops<Net>(batch) / step_seconds / 1e9;
//
// What counts: what each layer declares as at<In>::kMacs (layers/layer_spec.hpp): a convolution's out_c x out_h x
// out_w x in_c x K x K, an inner product's inputs x outputs, and a residual block's branches (its projection too).
// Batch norm, activations, pooling, dropout and the residual sums declare none, as the usual counts of CNNs leave
// them out (torchvision's documented 1.81 GFLOPS of ResNet-18 at 224x224 are its convolutions' and classifier's
// multiply-adds): they are a few operations per value where convolutions are hundreds. A training step is 3 times the forward's products (forward, backward data, backward
// weights) at 2 flops each: 6 x MACs x batch, the usual estimate of a step's work (it includes the first layer's
// backward data, which is not computed).
#pragma once

#include <cstddef>

#include "sinew/layers/layer_spec.hpp"

namespace sinew::metrics {

/// Multiply-adds of Net's forward pass for one sample (convolutions, inner products, residual branches).
template <class Net>
inline constexpr double forward_macs = sinew::detail::macs_of(typename Net::template nodes<false>{});

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
