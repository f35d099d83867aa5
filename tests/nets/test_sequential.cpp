// Shape inference, parameter counts and the flat-buffer layout of networks, checked at compile time
// (static_assert) and reported by one runtime test so ctest shows them.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "sinew/nets.hpp"
#include "sinew/nets/state_dict.hpp"

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

// Grouped, depthwise and dilated convolutions as PyTorch's Conv2d(groups=G, dilation=D): a dilated kernel covers
// D * (K - 1) + 1 pixels, the weights are [Out, In / G, K, K] (the state_dict's shape too), the fan-in In / G * K * K.
static_assert(std::is_same_v<Conv2d<8, 3, 1, 2, true, 2>::at<Shape<3, 16, 16>>::output, Shape<8, 16, 16>>);
static_assert(std::is_same_v<Conv2d<8, 3, 2, 1, true, 3>::at<Shape<3, 9, 9>>::output, Shape<8, 3, 3>>);  // span 7
using ResNeXtConv = Conv2d<128, 3, 1, 1, false, 1, 32>::at<Shape<128, 8, 8>>;                               // 32x4d
static_assert(ResNeXtConv::kWeights == 128 * 4 * 9 && ResNeXtConv::kBias == 0 && ResNeXtConv::kFanIn == 36);
static_assert(ResNeXtConv::kStateDict.size() == 1 &&
              ResNeXtConv::kStateDict[0].extents == std::array<std::int64_t, 4>{128, 4, 3, 3});
static_assert(ResNeXtConv::kMacs == 128.0 * 8 * 8 * 36);
using MobileNetDepthwise = DepthwiseConv2d<32, 3, 2, 1>::at<Shape<32, 8, 8>>;
static_assert(std::is_same_v<MobileNetDepthwise::output, Shape<32, 4, 4>> && MobileNetDepthwise::kWeights == 32 * 9);
static_assert(MobileNetDepthwise::kStateDict[0].extents == std::array<std::int64_t, 4>{32, 1, 3, 3});
static_assert(Sequential<Input<6, 5, 5>, Conv2d<4, 3, 1, 1, true, 1, 2>>::kParams == 4 * 3 * 9 + 4);

// Parameter counts equal PyTorch's.
static_assert(LeNetRgb::kParams == 62006);
static_assert(LeNetGray::kParams == 61706);

// Lowering: with fusion, each Conv2d/Dense absorbs the Tanh after it, and each Conv2d and Tanh the AvgPool after
// them (layers/detail/pooled_conv.hpp).
static_assert(LeNetRgb::nodes<false>::kSize == 12);
static_assert(LeNetRgb::nodes<true>::kSize == 6);
using first = std::tuple_element_t<0, as_tuple_t<LeNetRgb::nodes<true>>>;
static_assert(std::is_same_v<first::activation, Tanh> && std::is_same_v<first::output, Shape<6, 14, 14>> &&
              std::is_same_v<first::layer::conv, Conv2d<6, 5>>);

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

// BatchNorm2d: weight and bias are parameters, running_mean and running_var buffers (PyTorch's state_dict
// less num_batches_tracked).
static_assert(BatchNorm2d::at<Shape<64, 8, 8>>::kWeights + BatchNorm2d::at<Shape<64, 8, 8>>::kBias == 128);
static_assert(BatchNorm2d::at<Shape<64, 8, 8>>::kBuffers == 128);
static_assert(std::is_same_v<BatchNorm2d::at<Shape<64, 8, 8>>::output, Shape<64, 8, 8>>);
static_assert(std::is_same_v<Dropout<>::at<Shape<4, 2, 2>>::output, Shape<4, 2, 2>> && Dropout<>::kP == 0.5f);
static_assert(std::is_same_v<GlobalAvgPool::at<Shape<512, 7, 7>>::output, Shape<512, 1, 1>>);
static_assert(std::is_same_v<AdaptiveAvgPool<6>::at<Shape<256, 1, 1>>::output, Shape<256, 6, 6>>);
static_assert(std::is_same_v<AdaptiveAvgPool<7, 5>::at<Shape<3, 13, 13>>::output, Shape<3, 7, 5>>);

// A VGG-BN-like stack: parameter and buffer counts equal PyTorch's; each layer's buffers start aligned.
using BnNet = Sequential<Input<3, 8, 8>, Conv2d<64, 3, 1, 1>, BatchNorm2d, ReLU, MaxPool<2>, Conv2d<10, 3, 1, 1>,
                         BatchNorm2d, ReLU, GlobalAvgPool, Flatten, Dropout<>, Dense<4>>;
static_assert(BnNet::kParams == (64 * 27 + 64) + 128 + (10 * 64 * 9 + 10) + 20 + (10 * 4 + 4));
static_assert(BnNet::kBuffers == 128 + 20);
static_assert(BnNet::kBufferSpan == 128 + 32);  // 20 floats round up to two 64-byte blocks
using bn2 = std::tuple_element_t<3, as_tuple_t<BnNet::nodes<true>>>;  // conv, bn+relu, pool, conv, bn+relu
using bn1 = std::tuple_element_t<1, as_tuple_t<BnNet::nodes<true>>>;
static_assert(std::is_same_v<bn1::layer, BatchNorm2d> && std::is_same_v<bn1::activation, ReLU>);
static_assert(bn1::kBufferOffset == 0 && bn1::kBuffers == 128);
static_assert(std::is_same_v<bn2::layer, Conv2d<10, 3, 1, 1>> && bn2::kBuffers == 0 && bn2::kBufferOffset == 128);
static_assert(std::tuple_element_t<4, as_tuple_t<BnNet::nodes<true>>>::kBufferOffset == 128);
static_assert(LeNetRgb::kBuffers == 0 && LeNetRgb::kBufferSpan == 0);

TEST(sequential, lenet5_parameter_counts_equal_pytorch) {
  EXPECT_EQ(LeNetRgb::kParams, 62006u);
  EXPECT_EQ(LeNetGray::kParams, 61706u);
  EXPECT_EQ(to_string<LeNetRgb::input_shape>(), "3x32x32");
}

// The state_dict of a grouped convolution holds PyTorch's weight shape [Out, In / Groups, K, K].
TEST(sequential, grouped_conv_state_dict_weight_is_out_by_in_over_groups) {
  using Net = Sequential<Input<8, 6, 6>, Conv2d<12, 3, 1, 2, true, 2, 4>, DepthwiseConv2d<12, 3>>;
  const auto entries = state_dict_entries<Net>();
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].key, "0.weight");
  EXPECT_EQ(entries[0].shape(), (std::vector<std::int64_t>{12, 2, 3, 3}));
  EXPECT_EQ(entries[1].shape(), (std::vector<std::int64_t>{12}));
  EXPECT_EQ(entries[2].key, "1.weight");
  EXPECT_EQ(entries[2].shape(), (std::vector<std::int64_t>{12, 1, 3, 3}));
  EXPECT_EQ(Net::kParams, 12u * 2 * 9 + 12 + 12 * 9);
}

}  // namespace
