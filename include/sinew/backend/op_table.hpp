// sinew/backend/op_table.hpp: the one table from layer kind to op, which every backend fills.
//
// A layer spec declares its kind tag (`using kind = layer_kind::conv2d;`, layers/layer_spec.hpp); a backend
// names the op that computes a kind by specialising op_for<Kind, Backend> next to the op, in its own folder:
//
//   template <> struct op_for<layer_kind::dense, OneDnn> { using type = onednn::dense_op; };
//
// A specialisation gives either `type`, or `template <NodeType N> using type_for` where the op depends on the
// node (a composite layer's op holds the ops of its branches; OneDnn runs a convolution over an image no
// larger than its kernel as an inner product). Composite kinds are generic: backend/generic/residual.hpp fills
// layer_kind::residual for every backend, backend/generic/pooled_dense.hpp layer_kind::pooled_dense. A kind derived from layer_kind::plain (a layer that computes itself on
// plain floats) runs on backend/generic/plain_op.hpp wherever a backend does not map it, so a new layer kind
// needs no backend file. Any other kind that a backend lacks stops the build at the one trap below (as CUTLASS
// keys its dispatch on tag types with one trap template).
#pragma once

#include <concepts>

#include "sinew/backend/generic/plain_op.hpp"
#include "sinew/core/diagnostics.hpp"
#include "sinew/layers/layer_spec.hpp"

namespace sinew::backend {

/// op_for<Kind, B>: the op of backend B for layers of kind Kind. The primary template is the trap: naming
/// it is allowed (has_op_for below asks whether a backend fills a kind), asking it for an op stops the build.
template <class Kind, class B>
struct op_for {
  /// Marks the unfilled entry (has_op_for reads it; a specialisation does not declare it).
  using unmapped = void;
  /// The trap, reached when a node of this kind asks backend B for its op.
  template <class N>
  struct trap {
    static_assert(dependent_false<Kind, B, N>,
                  "the backend named in op_for<Kind, Backend> above has no implementation of this layer kind; add "
                  "an op under backend/<backend>/ and map the kind with an op_for<Kind, Backend> specialisation "
                  "beside it (the contract is in backend/backend_spec.hpp), or use another backend for this network");
    /// (no op)
    using type = void;
  };
  /// What a node of this kind gets: the trap.
  template <NodeType N>
  using type_for = typename trap<N>::type;
};

/// Whether backend B has an op for layer kind Kind: its table's entry (a generic entry, as Residual's, counts),
/// or the plain op of a kind derived from layer_kind::plain.
template <class Kind, class B>
concept has_op_for = !requires { typename op_for<Kind, B>::unmapped; } || std::derived_from<Kind, layer_kind::plain>;

namespace detail {
template <class B, class N>
struct op_of {
  using type = typename op_for<typename N::layer::kind, B>::template type_for<N>;
};
template <class B, class N>
  requires requires { typename op_for<typename N::layer::kind, B>::type; }
struct op_of<B, N> {
  using type = typename op_for<typename N::layer::kind, B>::type;
};
template <class B, class N>
  requires requires { typename op_for<typename N::layer::kind, B>::unmapped; } &&
           std::derived_from<typename N::layer::kind, layer_kind::plain>
struct op_of<B, N> {
  using type = generic::plain_op<B, N>;
};
}  // namespace detail

/// The op class that computes lowered node N on backend B: what B::op<N> names.
template <class B, NodeType N>
using op_of = typename detail::op_of<B, N>::type;

}  // namespace sinew::backend
