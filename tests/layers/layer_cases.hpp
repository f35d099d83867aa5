// The harness of the layer cases (test_gradients.cpp, test_gradients_blocks.cpp): the backends every case runs on,
// the check that every node profiles in a declared kind, and SINEW_LAYER_CASE. Two translation units, so that
// CI's two cores build the cases side by side.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "sinew/backend/eigen.hpp"  // first: EIGEN_USE_THREADS before any Tensor include
#include "../support/onednn_vs_eigen.hpp"
#include "../support/gradient_check.hpp"
#include "sinew/backend/mix.hpp"
#include "sinew/backend/onednn.hpp"
#include "sinew/layers/group_norm.hpp"
#include "sinew/metrics/profile.hpp"
#include "sinew/nets/lenet5.hpp"
#include "sinew/nets/resnet.hpp"

namespace sinew::test::layers {
using namespace sinew;
using sinew::test::check_gradients;
using metrics::Direction;
using metrics::OpKind;

// The mixed backend (backend/mix.hpp) crosses a boundary in every case with a convolution or a dense layer:
// oneDNN's blocked or plain outputs into Eigen's NHWC ops and back, in both passes.
using EigenWithOneDnnConvAndDense =
    backend::Mix<backend::Eigen, backend::Use<layer_kind::conv2d, backend::OneDnn>, backend::Use<Dense<1>, backend::OneDnn>>;
using Backends = ::testing::Types<backend::OneDnn, backend::Eigen, EigenWithOneDnnConvAndDense>;
struct BackendName {
  template <class B>
  static std::string GetName(int) {
    std::string name(B::kName);  // "eigen+onednn" for the Mix: "eigen_onednn" in test names
    std::replace(name.begin(), name.end(), '+', '_');
    return name;
  }
};
template <class B>
class gradient : public ::testing::Test {};
TYPED_TEST_SUITE(gradient, Backends, BackendName);

template <class... L>
using Net = Sequential<L...>;

/// Whether every node of a lowered list (and of its Residual branches) goes to a declared profile kind, its
/// fused activation included: a layer whose time would land in "other" fails the build of this file.
template <class... N>
constexpr bool profiles_every_node(type_list<N...>);
template <class N>
constexpr bool profiles_node() {
  // A kProfile that the profile's table lacks is the layer's own kind, declared at run time (never "other"):
  // what is checked here at compile time is that a name of the table maps to a kind of both passes.
  bool ok = true;
  if constexpr (metrics::is_profile_kind(N::layer::kProfile))
    ok = backend::node_kind<N>(Direction::forward) != OpKind::other &&
         backend::node_kind<N>(Direction::backward) != OpKind::other_backward;
  if constexpr (!std::is_same_v<typename N::activation, NoActivation>)
    ok = ok && backend::activation_kind(backend::activation_of<typename N::activation>(), Direction::forward) !=
                   OpKind::other;
  if constexpr (requires { typename N::applied::template main_nodes<true>; })
    ok = ok && profiles_every_node(typename N::applied::template main_nodes<true>{}) &&
         profiles_every_node(typename N::applied::template shortcut_nodes<true>{});
  return ok;
}
template <class... N>
constexpr bool profiles_every_node(type_list<N...>) {
  return (true && ... && profiles_node<N>());
}

// One configuration, every check: SINEW_LAYER_CASE(test_name, (gradient check options), network type).
#define SINEW_LAYER_CASE(name, options, ...)                                                               \
  static_assert(profiles_every_node(__VA_ARGS__::nodes<true>{}), #name ": a node profiles as \"other\""); \
  TYPED_TEST(gradient, name) {                                                                             \
    EXPECT_GT((check_gradients<__VA_ARGS__, TypeParam>(test::GradientCheckOptions options)), 0);           \
  }                                                                                                        \
  TEST(onednn_vs_eigen, name) {                                                                           \
    test::expect_equivalent<__VA_ARGS__>({.input_scale = test::GradientCheckOptions options.input_scale}); \
  }

}  // namespace sinew::test::layers
