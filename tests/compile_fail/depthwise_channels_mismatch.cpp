// Must not compile: a DepthwiseConv2d of 4 channels on an input of 8.
#include "sinew/nets/sequential.hpp"
#include "sinew/layers.hpp"
using Net = sinew::Sequential<sinew::Input<8, 8, 8>, sinew::DepthwiseConv2d<4, 3, 1, 1>>;
static_assert(Net::kParams > 0);
