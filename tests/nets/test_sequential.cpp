// Shape inference, parameter counts and the flat-buffer layout of networks, checked at compile time
// (static_assert) and reported by one runtime test so ctest shows them.
#include <gtest/gtest.h>

#include <type_traits>

#include "sinew/nets.hpp"

namespace {
using namespace sinew;

using LeNetGray = nets::LeNet5<>;
using LeNetRgb = nets::LeNet5<Input<3, 32, 32>>;

// Output shapes are inferred layer by layer.
static_assert(std::is_same_v<LeNetRgb::output_shape, Flat<10>>);
static_assert(std::is_same_v<nets::LeNet5<Input<1, 32, 32>, 7>::output_shape, Flat<7>>);
static_assert(std::is_same_v<Conv2d<6, 5>::at<Shape<3, 32, 32>>::output, Shape<6, 28, 28>>);
static_assert(std::is_same_v<Conv2d<8, 3, 2, 1>::at<Shape<3, 32, 32>>::output, Shape<8, 16, 16>>);
static_assert(std::is_same_v<MaxPool<3, 2, 1>::at<Shape<4, 7, 7>>::output, Shape<4, 4, 4>>);
static_assert(std::is_same_v<Flatten::at<Shape<16, 5, 5>>::output, Flat<400>>);
// A 3x3 convolution with padding 1 on a 1x1 map is legal (ResNet's last stage on 32x32 inputs).
static_assert(std::is_same_v<Conv2d<4, 3, 1, 1>::at<Shape<8, 1, 1>>::output, Shape<4, 1, 1>>);

// Parameter counts equal PyTorch's.
static_assert(LeNetRgb::kParams == 62006);
static_assert(LeNetGray::kParams == 61706);

// Lowering: with fusion, each Conv2d/Dense absorbs the Tanh after it.
static_assert(LeNetRgb::nodes<false>::kSize == 12);
static_assert(LeNetRgb::nodes<true>::kSize == 8);
using first = std::tuple_element_t<0, as_tuple_t<LeNetRgb::nodes<true>>>;
static_assert(std::is_same_v<first::activation, Tanh> && std::is_same_v<first::output, Shape<6, 28, 28>>);

// Every node's parameters start on a 64-byte boundary and do not overlap the next node's.
template <class... N>
constexpr bool aligned_and_disjoint(type_list<N...>) {
  std::size_t end = 0;
  bool ok = true;
  ((ok = ok && N::kParamOffset % kAlignFloats == 0 && N::kParamOffset >= end, end = N::kParamOffset + N::kParams), ...);
  return ok;
}
static_assert(aligned_and_disjoint(LeNetRgb::nodes<true>{}));
static_assert(LeNetRgb::kParamSpan >= LeNetRgb::kParams && LeNetRgb::kParamSpan % kAlignFloats == 0);

TEST(sequential, lenet5_parameter_counts_equal_pytorch) {
  EXPECT_EQ(LeNetRgb::kParams, 62006u);
  EXPECT_EQ(LeNetGray::kParams, 61706u);
  EXPECT_EQ(to_string<LeNetRgb::input_shape>(), "3x32x32");
}

}  // namespace
