// sinew/backend/mix.hpp: backend::Mix, a backend that computes chosen layer kinds with another backend.
//
//   using Backend = backend::Mix<backend::OneDnn,                               // every other kind
//                                backend::Use<BatchNorm2d, backend::Eigen>,     // BatchNorm2d layers
//                                backend::Use<layer_kind::dense, backend::Eigen>>;  // Dense layers
//
// This is how an experiment isolates one operator: the TensorFlow preset with oneDNN's convolutions and nothing
// else is presets::TensorFlow<...>::with_backend<Mix<Eigen, Use<layer_kind::conv2d, OneDnn>>> (docs/guide.md).
//
// The table. Mix fills the one layer-to-op table (backend/op_table.hpp) with one entry for every kind: a
// Mix's op for kind K is the op_for<K, Other> of the backend that a Use names for K, else op_for<K, Base>.
// A kind computed by the base gets exactly the base's op (the same type a plain Base model instantiates);
// a kind computed by another backend gets that backend's op inside a boundary_op (below). Residual blocks
// run their branches on the Mix itself (each branch's layers follow the same Uses), with the base's adder,
// unless a Use names layer_kind::residual, which runs the whole block on the other backend.
//
// Use<What, B>. What is a layer spec (BatchNorm2d, Dense<10>: the Use covers every layer of its kind, since
// the table is keyed by kind) or a kind tag (layer_kind::conv2d: the way to name a layer template such as
// Conv2d). A Use whose kind the network does not have is allowed and changes nothing: a Mix is a backend,
// independent of the network, as OneDnn's table has entries that a LeNet-5 never reaches.
//
// Tensors and the boundary. Between ops a Mix exchanges the base's tensors (its tensor, tensor_desc,
// external, converter, adder and to_plain are the base's). A boundary_op converts at set-up-planned points,
// using nothing but the Backend contract of the two backends, so any pair works:
//   forward   the input, in the base's layout (OneDnn: blocked nChw16c/nChw8c as its previous primitive chose;
//             Eigen: NHWC), goes through a Base::converter to the base's plain NCHW, whose floats the other
//             backend sees through its `external` without a copy; the op's output goes through an
//             Other::converter to plain and is seen by the base through a Base::external;
//   backward  the output gradient and the input gradient cross the same way.
// Every converter is created once when the plan is built (a converter between equal layouts passes the tensor
// through); a step only executes them. Their time is the operator profile's "reorder" (forward) and
// "reorder_backward" (metrics/profile.hpp), recorded on every node that crosses a boundary. The receiving
// op's own conversion from plain NCHW into the layout it prefers stays in its kind, as it does for the
// Model's input. A run of consecutive nodes on the other backend crosses at every node (each node is its
// own boundary), so mix whole kinds where that matters.
//
// Context. Mix::context is the base's context (it derives from it, so the base's ops take it unchanged) plus
// one context per other backend, all built from the same BackendOptions. OneDnn runs on OpenMP and Eigen on
// its own pool: a mixed model has both, used one after the other.
//
// What cannot work stops the build with a sentence (tests/compile_fail/mix_*.cpp): a base or a Use's backend
// that is not a backend, a Mix inside a Mix (list every Use in one Mix instead), a parameter that is not a
// Use, a Use whose backend has no op for its kind, two Uses of one kind, backends that fuse activations
// differently.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "sinew/backend/backend_spec.hpp"
#include "sinew/backend/generic/probe.hpp"
#include "sinew/backend/generic/pooled_conv.hpp"
#include "sinew/backend/generic/pooled_dense.hpp"
#include "sinew/backend/generic/residual.hpp"
#include "sinew/backend/op_table.hpp"
#include "sinew/core/diagnostics.hpp"
#include "sinew/core/type_list.hpp"
#include "sinew/metrics/profile.hpp"

namespace sinew::backend {

namespace detail::mix {
template <class What>
struct kind_of {
  using type = What;
};
template <class What>
  requires requires { typename What::kind; }
struct kind_of<What> {
  using type = typename What::kind;
};
}  // namespace detail::mix

/// One override of a backend::Mix: layers of What's kind run on backend B. What is a layer spec (its kind is
/// taken) or a layer_kind tag.
template <class What, class B>
struct Use {
  /// the layer kind overridden
  using kind = typename detail::mix::kind_of<What>::type;
  /// the backend that computes it
  using backend = B;
};

template <class Base, class... Uses>
struct Mix;

namespace detail::mix {

template <class T>
inline constexpr bool is_use_v = false;
template <class W, class B>
inline constexpr bool is_use_v<Use<W, B>> = true;
template <class T>
inline constexpr bool is_mix_v = false;
template <class B, class... U>
inline constexpr bool is_mix_v<Mix<B, U...>> = true;

/// The backend that a Use names for Kind, or void.
template <class Kind, class... U>
struct override_of {
  using type = void;
};
template <class Kind, class U, class... Rest>
struct override_of<Kind, U, Rest...> {
  using type = std::conditional_t<std::is_same_v<typename U::kind, Kind>, typename U::backend,
                                  typename override_of<Kind, Rest...>::type>;
};

/// The distinct backends of the Uses other than Base, in order of first appearance.
template <class Base, class Done, class... U>
struct others {
  using type = Done;
};
template <class Base, class... D, class U, class... Rest>
struct others<Base, type_list<D...>, U, Rest...> {
  using B = typename U::backend;
  static constexpr bool kSkip = std::is_same_v<B, Base> || (std::is_same_v<B, D> || ...);
  using type = typename others<Base, std::conditional_t<kSkip, type_list<D...>, type_list<D..., B>>, Rest...>::type;
};

/// "onednn+eigen": the base's name and each other backend's, joined by '+'.
template <class Base, class Others>
struct name;
template <class Base, class... O>
struct name<Base, type_list<O...>> {
  static constexpr std::size_t kSize = Base::kName.size() + (std::size_t(0) + ... + (1 + O::kName.size()));
  static constexpr std::array<char, kSize> kChars = [] {
    std::array<char, kSize> out{};
    std::size_t at = 0;
    for (char c : Base::kName) out[at++] = c;
    (
        [&] {
          out[at++] = '+';
          for (char c : O::kName) out[at++] = c;
        }(),
        ...);
    return out;
  }();
  static constexpr std::string_view value{kChars.data(), kSize};
};

/// A backend as far as a Mix can tell before using it: the traits of the Backend contract.
template <class B>
concept backend_like = req::has_backend_traits<B> && requires {
  typename B::context;
  typename B::tensor;
};

/// The sentences for one parameter U of Mix<Base, ...>; each asks only what the ones before it made safe.
template <class Base, class U>
constexpr bool check_use() {
  if constexpr (!is_use_v<U>) {
    static_assert(is_use_v<U>,
                  "every parameter of backend::Mix<Base, Uses...> after the base must be backend::Use<Layer or "
                  "layer_kind, Backend>, e.g. Mix<OneDnn, Use<BatchNorm2d, Eigen>>");
    return false;
  } else if constexpr (is_mix_v<typename U::backend>) {
    static_assert(!is_mix_v<typename U::backend>,
                  "backend::Use<Layer, Backend>: Backend cannot be a backend::Mix; name the backend that computes "
                  "the layer (OneDnn, Eigen)");
    return false;
  } else if constexpr (!backend_like<typename U::backend>) {
    static_assert(backend_like<typename U::backend>,
                  "backend::Use<Layer, Backend>: Backend is not a backend (it lacks the kName, kFuseActivations, "
                  "context and tensor of backend/backend_spec.hpp); name one such as OneDnn or Eigen");
    return false;
  } else if constexpr (!has_op_for<typename U::kind, typename U::backend>) {
    static_assert(has_op_for<typename U::kind, typename U::backend>,
                  "backend::Use<Layer, Backend>: Backend has no op for this layer kind (no op_for<Kind, Backend> "
                  "entry in the table of backend/op_table.hpp); use a backend that computes it, or add the op");
    return false;
  } else if constexpr (U::backend::kFuseActivations != Base::kFuseActivations) {
    static_assert(U::backend::kFuseActivations == Base::kFuseActivations,
                  "backend::Mix: the Use's backend and the base fuse activations differently (kFuseActivations), so "
                  "they lower the network into different nodes; mix backends that lower it the same way");
    return false;
  } else {
    return true;
  }
}

template <class K, class... All>
inline constexpr std::size_t count_of = (std::size_t(0) + ... + std::size_t(std::is_same_v<K, All>));
template <class... All, class... K>
constexpr bool all_distinct(type_list<All...>, type_list<K...>) {
  return (true && ... && (count_of<K, All...> == 1));
}

template <class Base, class... U>
constexpr bool check_mix() {
  if constexpr (is_mix_v<Base>) {
    static_assert(!is_mix_v<Base>,
                  "backend::Mix cannot take another Mix as its base: list every Use in one Mix, e.g. "
                  "Mix<OneDnn, Use<BatchNorm2d, Eigen>, Use<layer_kind::dense, Eigen>>");
    return false;
  } else if constexpr (!backend_like<Base>) {
    static_assert(backend_like<Base>,
                  "backend::Mix<Base, Uses...>: Base is not a backend (it lacks the kName, kFuseActivations, context "
                  "and tensor of backend/backend_spec.hpp); the base computes every kind no Use names: OneDnn or "
                  "Eigen");
    return false;
  } else if constexpr (!(check_use<Base, U>() && ...)) {
    return false;
  } else {
    constexpr bool kDistinct = all_distinct(type_list<typename U::kind...>{}, type_list<typename U::kind...>{});
    static_assert(kDistinct,
                  "backend::Mix: two Use<...> name the same layer kind (a layer spec names its kind: Conv2d<8, 3> and "
                  "layer_kind::conv2d are the same); keep one Use per kind");
    return kDistinct;
  }
}

/// Mix::context: the base's context, plus one for each other backend.
template <class Base, class Others>
class context;
template <class Base, class... O>
class context<Base, type_list<O...>> : public Base::context {
 public:
  /// Every backend's context from the same options.
  explicit context(BackendOptions options = {}) : Base::context(options), others_(((void)sizeof(O), options)...) {}

  /// The context of backend B (the base, or one a Use names).
  template <class B>
  typename B::context& get() noexcept {
    if constexpr (std::is_same_v<B, Base>)
      return *this;
    else
      return std::get<typename B::context>(others_);
  }

 private:
  std::tuple<typename O::context...> others_;
};

/// Node N computed by backend Other inside Mix M whose tensors are Base's: the op between two conversions
/// planned at set-up (see the header comment). Fulfils the op contract of backend_spec.hpp for M.
template <class M, class Other, NodeType N>
class boundary_op {
  using Base = typename M::base;
  using in = typename N::input;
  using out = typename N::output;
  using inner = backend::op_of<Other, N>;
  using tensor = typename Base::tensor;
  using tensor_desc = typename Base::tensor_desc;

 public:
  /// Plans the conversions of the input and output and sets the other backend's op up on plain NCHW input.
  template <NodeType>
  void setup(typename M::context& ctx, const tensor_desc& src_desc, int batch, ParamSlots slots, bool need_diff_src) {
    auto& base = ctx.template get<Base>();
    auto& other = ctx.template get<Other>();
    need_diff_src_ = need_diff_src;
    src_to_plain_.setup(base, src_desc, Base::plain_like(src_desc));
    src_.setup(other, Other::plain_desc(batch, in::kChannels, in::kHeight, in::kWidth));
    op_.template setup<N>(other, src_.desc(), batch, slots, need_diff_src);
    dst_to_plain_.setup(other, op_.dst_desc(), Other::plain_like(op_.dst_desc()));
    dst_.setup(base, Base::plain_desc(batch, out::kChannels, out::kHeight, out::kWidth));
    // A gradient is bound in the dimensions of the tensor it is the gradient of (OneDnn's Flatten gives a
    // 2-D output, which a 4-D gradient could not be reordered into): plain_like of that tensor's descriptor.
    diff_src_.setup(base, Base::plain_like(src_desc));
  }

  /// The op contract (backend_spec.hpp), in the base's tensors: plain NCHW on both sides.
  /// @{
  tensor_desc dst_desc() const { return dst_.desc(); }
  const tensor& dst() const noexcept { return *dst_tensor_; }
  tensor_desc diff_src_desc() const { return diff_src_.desc(); }
  const tensor& diff_src() const noexcept { return *diff_src_tensor_; }
  /// @}

  /// Plans the conversions of the output gradient and of the input gradient.
  void bind_diff_dst(typename M::context& ctx, const tensor_desc& d) {
    auto& base = ctx.template get<Base>();
    auto& other = ctx.template get<Other>();
    diff_dst_to_plain_.setup(base, d, Base::plain_like(d));
    diff_dst_.setup(other, Other::plain_like(op_.dst_desc()));
    op_.bind_diff_dst(other, diff_dst_.desc());
    if (need_diff_src_) diff_src_to_plain_.setup(other, op_.diff_src_desc(), Other::plain_like(op_.diff_src_desc()));
  }

  /// The inner op's mode hook, where it has one.
  void set_mode(ForwardMode mode)
    requires req::has_mode<inner>
  {
    op_.set_mode(mode);
  }

  /// Without a profile.
  /// @{
  void forward(typename M::context& ctx, const tensor& src) { forward(ctx, src, metrics::no_probe); }
  void backward(typename M::context& ctx, const tensor& src, const tensor& diff_dst) {
    backward(ctx, src, diff_dst, metrics::no_probe);
  }
  /// @}

  /// The conversions as "reorder", the op in its own kinds (split further if it splits its time).
  template <class Probe>
  void forward(typename M::context& ctx, const tensor& src, Probe& probe) {
    auto& base = ctx.template get<Base>();
    auto& other = ctx.template get<Other>();
    probe.begin(metrics::OpKind::reorder);
    src_tensor_ = &src_.bind(Base::data(src_to_plain_(base, src)));
    forward_probed(op_, other, *src_tensor_, probe, node_kind<N>(metrics::Direction::forward));
    probe.begin(metrics::OpKind::reorder);
    dst_tensor_ = &dst_.bind(Other::data(dst_to_plain_(other, op_.dst())));
  }

  /// The gradients' conversions as "reorder_backward"; `src` is the input of the last forward().
  template <class Probe>
  void backward(typename M::context& ctx, const tensor&, const tensor& diff_dst, Probe& probe) {
    auto& base = ctx.template get<Base>();
    auto& other = ctx.template get<Other>();
    probe.begin(metrics::OpKind::reorder_backward);
    const auto& dd = diff_dst_.bind(Base::data(diff_dst_to_plain_(base, diff_dst)));
    backward_probed(op_, other, *src_tensor_, dd, probe, node_kind<N>(metrics::Direction::backward));
    if (!need_diff_src_) return;
    probe.begin(metrics::OpKind::reorder_backward);
    diff_src_tensor_ = &diff_src_.bind(Other::data(diff_src_to_plain_(other, op_.diff_src())));
  }

 private:
  inner op_;
  bool need_diff_src_ = false;
  // Into the other backend: the base's tensor to plain floats, seen by Other without a copy.
  typename Base::converter src_to_plain_, diff_dst_to_plain_;
  typename Other::external src_, diff_dst_;
  // Back to the base: the other backend's tensor to plain floats, seen by Base without a copy.
  typename Other::converter dst_to_plain_, diff_src_to_plain_;
  typename Base::external dst_, diff_src_;
  const typename Other::tensor* src_tensor_ = nullptr;
  const tensor* dst_tensor_ = nullptr;
  const tensor* diff_src_tensor_ = nullptr;
};

/// The op of node N in Mix M: the Use's backend's op at a boundary, else the base's own op.
template <class M, class Other, NodeType N>
struct op_in {
  using type = boundary_op<M, Other, N>;
};
template <class M, NodeType N>
struct op_in<M, void, N> {
  using type = backend::op_of<typename M::base, N>;
};
template <class M, NodeType N>
struct op_in<M, typename M::base, N> {
  using type = backend::op_of<typename M::base, N>;
};

}  // namespace detail::mix

/// A backend that computes the layer kinds its Uses name with their backends and every other kind with Base,
/// converting layouts at the boundaries (see the header comment). Base is OneDnn or Eigen; Uses are
/// Use<Layer or layer_kind, Backend>.
template <class Base, class... Uses>
struct Mix {
  static_assert(detail::mix::check_mix<Base, Uses...>(), "backend::Mix: see the sentence above");
  /// the backend of every kind that no Use names
  using base = Base;
  /// the distinct backends the Uses name, other than Base
  using others = typename detail::mix::others<Base, type_list<>, Uses...>::type;

  /// The Backend contract: backend/backend_spec.hpp says what each member does. Tensors are the base's.
  /// @{
  static constexpr std::string_view kName = detail::mix::name<Base, others>::value;
  static constexpr bool kFuseActivations = Base::kFuseActivations;

  using context = detail::mix::context<Base, others>;
  using tensor = typename Base::tensor;
  using tensor_desc = typename Base::tensor_desc;
  using external = typename Base::external;
  using converter = typename Base::converter;

  static tensor_desc plain_desc(int n, int c, int h, int w) { return Base::plain_desc(n, c, h, w); }
  static tensor_desc plain_like(const tensor_desc& d) { return Base::plain_like(d); }
  static void to_plain(context& ctx, const tensor& t, float* out) { Base::to_plain(ctx, t, out); }
  static float* data(const tensor& t) { return Base::data(t); }

  using adder = typename Base::adder;

  template <NodeType N>
  using op = op_of<Mix, N>;  ///< the op_for table (backend/op_table.hpp): the entries below
  /// @}
};

/// Every kind of a Mix: the op of the backend a Use names for it, else the base's.
template <class Kind, class Base, class... Uses>
struct op_for<Kind, Mix<Base, Uses...>> {
  /// see detail::mix::op_in
  template <NodeType N>
  using type_for =
      typename detail::mix::op_in<Mix<Base, Uses...>, typename detail::mix::override_of<Kind, Uses...>::type, N>::type;
};

/// Residual blocks of a Mix run their branches on the Mix (each layer follows the Uses), unless a Use names
/// layer_kind::residual: then the whole block runs on that backend.
template <class Base, class... Uses>
struct op_for<layer_kind::residual, Mix<Base, Uses...>> {
  /// see above
  template <NodeType N>
  using type_for = std::conditional_t<
      std::is_void_v<typename detail::mix::override_of<layer_kind::residual, Uses...>::type>,
      generic::residual_op<Mix<Base, Uses...>, N>,
      typename detail::mix::op_in<Mix<Base, Uses...>,
                                 typename detail::mix::override_of<layer_kind::residual, Uses...>::type, N>::type>;
};

/// A PooledConv node (a Conv2d, its activation and a non-overlapping AvgPool) of a Mix runs its convolution and its
/// pool on the Mix (each follows the Uses), unless a Use names layer_kind::pooled_conv: then on that backend.
template <class Base, class... Uses>
struct op_for<layer_kind::pooled_conv, Mix<Base, Uses...>> {
  /// see above
  template <NodeType N>
  using type_for = std::conditional_t<
      std::is_void_v<typename detail::mix::override_of<layer_kind::pooled_conv, Uses...>::type>,
      generic::pooled_conv_op<Mix<Base, Uses...>, N>,
      typename detail::mix::op_in<Mix<Base, Uses...>,
                                 typename detail::mix::override_of<layer_kind::pooled_conv, Uses...>::type, N>::type>;
};

/// A PooledDense node (an enlarging adaptive pool, Flatten and a Dense, folded) of a Mix runs its Flatten and Dense
/// on the Mix (each follows the Uses), unless a Use names layer_kind::pooled_dense: then on that backend.
template <class Base, class... Uses>
struct op_for<layer_kind::pooled_dense, Mix<Base, Uses...>> {
  /// see above
  template <NodeType N>
  using type_for = std::conditional_t<
      std::is_void_v<typename detail::mix::override_of<layer_kind::pooled_dense, Uses...>::type>,
      generic::pooled_dense_op<Mix<Base, Uses...>, N>,
      typename detail::mix::op_in<Mix<Base, Uses...>,
                                 typename detail::mix::override_of<layer_kind::pooled_dense, Uses...>::type, N>::type>;
};

}  // namespace sinew::backend
