// sinew/backend/generic/chain.hpp: runs a lowered list of nodes on any backend, as one op. Composite layers
// (Residual) use it for their branches. An empty chain is the identity: its output is its input and its
// input gradient is its output gradient, with no copy.
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "sinew/backend/backend_spec.hpp"
#include "sinew/backend/generic/probe.hpp"
#include "sinew/core/rng.hpp"
#include "sinew/core/type_list.hpp"

namespace sinew::backend::generic {

template <class B, class Nodes>
class chain;

template <class B, class... N>
class chain<B, type_list<N...>> {
 public:
  using tensor = typename B::tensor;
  using tensor_desc = typename B::tensor_desc;
  static constexpr std::size_t kOps = sizeof...(N);

  /// `base` points at the composite's slices of the flat buffers; node offsets are relative to it.
  void setup(typename B::context& ctx, const tensor_desc& src_desc, int batch, ParamSlots base, bool need_diff_src) {
    src_desc_ = src_desc;
    need_diff_src_ = need_diff_src;
    if constexpr (kOps > 0) setup_at<0>(ctx, src_desc, batch, base);
  }

  tensor_desc dst_desc() const {
    if constexpr (kOps == 0)
      return src_desc_;
    else
      return std::get<kOps - 1>(ops_).dst_desc();
  }
  const tensor& dst() const {
    if constexpr (kOps == 0)
      return *src_;
    else
      return std::get<kOps - 1>(ops_).dst();
  }
  tensor_desc diff_src_desc() const {
    if constexpr (kOps == 0)
      return diff_dst_desc_;
    else
      return std::get<0>(ops_).diff_src_desc();
  }
  const tensor& diff_src() const {
    if constexpr (kOps == 0)
      return *diff_dst_;
    else
      return std::get<0>(ops_).diff_src();
  }

  void bind_diff_dst(typename B::context& ctx, const tensor_desc& d) {
    diff_dst_desc_ = d;
    if constexpr (kOps > 0) bind_diff_at<kOps - 1>(ctx, d);
  }

  void set_mode(ForwardMode mode) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (
          [&] {
            auto& op = std::get<I>(ops_);
            if constexpr (req::has_mode<std::remove_cvref_t<decltype(op)>>)
              op.set_mode(ForwardMode{mode.training, mix64(mode.seed ^ mix64(I + 1)), mode.weights_unchanged});
          }(),
          ...);
    }(std::make_index_sequence<kOps>{});
  }

  void forward(typename B::context& ctx, const tensor& src) { forward(ctx, src, metrics::no_probe); }
  void backward(typename B::context& ctx, const tensor& src, const tensor& diff_dst) {
    backward(ctx, src, diff_dst, metrics::no_probe);
  }
  /// With a profiling probe, each op's time goes to its own kind (see metrics/profile.hpp).
  template <class Probe>
  void forward(typename B::context& ctx, const tensor& src, Probe& probe) {
    src_ = &src;
    if constexpr (kOps > 0) forward_at<0>(ctx, src, probe);
  }
  template <class Probe>
  void backward(typename B::context& ctx, const tensor& src, const tensor& diff_dst, Probe& probe) {
    diff_dst_ = &diff_dst;
    if constexpr (kOps > 0) backward_at<kOps - 1>(ctx, src, diff_dst, probe);
  }

 private:
  using nodes = type_list<N...>;
  template <std::size_t I>
  using node_at = std::tuple_element_t<I, std::tuple<N...>>;

  template <std::size_t I>
  static constexpr bool params_before() {
    return []<std::size_t... J>(std::index_sequence<J...>) {
      return (false || ... || (node_at<J>::kParams > 0));
    }(std::make_index_sequence<I>{});
  }
  template <std::size_t I>
  bool needs_diff_src() const {
    return need_diff_src_ || params_before<I>();
  }

  template <std::size_t I>
  void setup_at(typename B::context& ctx, const tensor_desc& src_desc, int batch, ParamSlots base) {
    using M = node_at<I>;
    float* w = base.weights + M::kParamOffset;
    float* dw = base.diff_weights + M::kParamOffset;
    const ParamSlots slots{w, M::kBias ? w + M::kWeights : nullptr, dw, M::kBias ? dw + M::kWeights : nullptr,
                           M::kBuffers ? base.buffers + M::kBufferOffset : nullptr, base.sum_over_workers};
    auto& op = std::get<I>(ops_);
    op.template setup<M>(ctx, src_desc, batch, slots, needs_diff_src<I>());
    if constexpr (I + 1 < kOps) setup_at<I + 1>(ctx, op.dst_desc(), batch, base);
  }
  template <std::size_t I>
  void bind_diff_at(typename B::context& ctx, const tensor_desc& d) {
    auto& op = std::get<I>(ops_);
    op.bind_diff_dst(ctx, d);
    if constexpr (I > 0)
      if (needs_diff_src<I>()) bind_diff_at<I - 1>(ctx, op.diff_src_desc());
  }
  template <std::size_t I, class Probe>
  void forward_at(typename B::context& ctx, const tensor& src, Probe& probe) {
    auto& op = std::get<I>(ops_);
    forward_probed(op, ctx, src, probe, node_kind<node_at<I>>(metrics::Direction::forward));
    if constexpr (I + 1 < kOps) forward_at<I + 1>(ctx, op.dst(), probe);
  }
  template <std::size_t I, class Probe>
  void backward_at(typename B::context& ctx, const tensor& chain_src, const tensor& diff_dst, Probe& probe) {
    auto& op = std::get<I>(ops_);
    const auto kind = node_kind<node_at<I>>(metrics::Direction::backward);
    if constexpr (I == 0) {
      backward_probed(op, ctx, chain_src, diff_dst, probe, kind);
    } else {
      backward_probed(op, ctx, std::get<I - 1>(ops_).dst(), diff_dst, probe, kind);
      if (needs_diff_src<I>()) backward_at<I - 1>(ctx, chain_src, op.diff_src(), probe);
    }
  }

  std::tuple<typename B::template op<N>...> ops_;
  tensor_desc src_desc_{}, diff_dst_desc_{};
  const tensor* src_ = nullptr;
  const tensor* diff_dst_ = nullptr;
  bool need_diff_src_ = false;
};

}  // namespace sinew::backend::generic
