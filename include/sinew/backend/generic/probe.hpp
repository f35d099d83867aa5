// sinew/backend/generic/probe.hpp: how the Model and composite ops hand a profiling probe to a backend op
// (see metrics/profile.hpp). An op that splits its time offers forward(ctx, src, probe) and
// backward(ctx, src, diff_dst, probe); every other op is called plainly and timed whole in its node's kind.
#pragma once

#include <string_view>

#include "sinew/backend/simd/activation_kind.hpp"
#include "sinew/metrics/profile.hpp"

namespace sinew::backend {

/// The profile kind of an activation kernel's pass.
constexpr metrics::OpKind activation_kind(simd::activation a, metrics::Direction d) {
  switch (a) {
    case simd::activation::relu: return metrics::activation_kind("relu", d);
    case simd::activation::tanh: return metrics::activation_kind("tanh", d);
    case simd::activation::sigmoid: return metrics::activation_kind("sigmoid", d);
    default: return metrics::activation_kind("", d);
  }
}

/// The kind a lowered node's time goes to unless its op says otherwise.
template <class N>
constexpr metrics::OpKind node_kind(metrics::Direction d) {
  return metrics::default_kind(N::layer::kName, d);
}

/// Runs op.forward with the probe if the op splits its time, else as one part of kind `whole`.
template <class Op, class Ctx, class T, class Probe>
void forward_probed(Op& op, Ctx& ctx, const T& src, Probe& probe, metrics::OpKind whole) {
  if constexpr (requires { op.forward(ctx, src, probe); }) {
    op.forward(ctx, src, probe);
  } else {
    probe.begin(whole);
    op.forward(ctx, src);
  }
}

template <class Op, class Ctx, class T, class Probe>
void backward_probed(Op& op, Ctx& ctx, const T& src, const T& diff_dst, Probe& probe, metrics::OpKind whole) {
  if constexpr (requires { op.backward(ctx, src, diff_dst, probe); }) {
    op.backward(ctx, src, diff_dst, probe);
  } else {
    probe.begin(whole);
    op.backward(ctx, src, diff_dst);
  }
}

}  // namespace sinew::backend
