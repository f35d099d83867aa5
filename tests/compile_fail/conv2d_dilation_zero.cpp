// Must not compile: dilation 0 (PyTorch's dilation starts at 1).
#include "sinew/nets/sequential.hpp"
#include "sinew/layers.hpp"
using Net = sinew::Sequential<sinew::Input<4, 8, 8>, sinew::Conv2d<4, 3, 1, 1, true, 0>>;
static_assert(Net::kParams > 0);
