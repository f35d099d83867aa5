// sinew/backend/generic/probe.hpp: how the Model and composite ops hand a profiling probe to a backend op
// (see metrics/profile.hpp). An op that splits its time offers forward(ctx, src, probe) and
// backward(ctx, src, diff_dst, probe); every other op is called plainly and timed whole in its node's kind.
#pragma once

#include <string_view>

#include "sinew/backend/simd/activation_kind.hpp"
#include "sinew/core/type_list.hpp"
#include "sinew/layers/activation.hpp"
#include "sinew/metrics/profile.hpp"

namespace sinew::backend {

namespace detail {
template <class... A>
constexpr metrics::OpKind activation_kind_in(simd::activation a, metrics::Direction d, type_list<A...>) {
  metrics::OpKind k = metrics::default_kind("", d);
  (void)((simd::kernel_of<A> == a ? (k = metrics::default_kind(A::kProfile, d), true) : false) || ...);
  return k;
}
}  // namespace detail

/// The profile kind of an activation kernel's pass: the kProfile of the activation layer it computes.
constexpr metrics::OpKind activation_kind(simd::activation a, metrics::Direction d) {
  return detail::activation_kind_in(a, d, activations{});
}

/// The kind a lowered node's time goes to unless its op says otherwise: the one its layer spec declares.
template <class N>
constexpr metrics::OpKind node_kind(metrics::Direction d) {
  static_assert(metrics::is_profile_kind(N::layer::kProfile),
                "the layer's kProfile names no operator kind of metrics::OpKind (see metrics/profile.hpp): declare "
                "one of \"convolution\", \"fully_connected\", \"batch_norm\", \"pooling\", \"relu\", \"tanh\", "
                "\"sigmoid\", \"dropout\", \"flatten\", \"add\", or add a kind there");
  return metrics::default_kind(N::layer::kProfile, d);
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
