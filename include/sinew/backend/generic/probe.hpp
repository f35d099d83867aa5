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

/// A layer's own kinds (see node_kind), declared once per layer type.
template <class L>
metrics::OpKind declared_node_kind(metrics::Direction d) {
  static const metrics::OpKind forward = metrics::profile_kind(L::kProfile, metrics::Direction::forward);
  static const metrics::OpKind backward = metrics::profile_kind(L::kProfile, metrics::Direction::backward);
  return d == metrics::Direction::forward ? forward : backward;
}
}  // namespace detail

/// The profile kind of an activation kernel's pass: the kProfile of the activation layer it computes.
constexpr metrics::OpKind activation_kind(simd::activation a, metrics::Direction d) {
  return detail::activation_kind_in(a, d, activations{});
}

/// The kind a lowered node's time goes to unless its op says otherwise: the one its layer spec declares
/// (metrics::profile_kind: a constant for a kind of the profile's table, else the layer's own kind, declared
/// once, at the first call, for each layer type).
template <class N>
constexpr metrics::OpKind node_kind(metrics::Direction d) {
  constexpr std::string_view kProfile = N::layer::kProfile;
  static_assert(!kProfile.empty() && kProfile.find("backward") == std::string_view::npos,
                "a layer's kProfile names the operator kind of its forward pass (metrics/profile.hpp): a name such as "
                "\"convolution\" or \"group_norm\", without \"backward\" (its backward pass is "
                "\"<kProfile>_backward\")");
  if constexpr (metrics::is_profile_kind(kProfile)) {
    return metrics::default_kind(kProfile, d);
  } else {
    return detail::declared_node_kind<typename N::layer>(d);
  }
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
