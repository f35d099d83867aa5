// Must not compile: a Dense layer directly after a convolution's C x H x W output.
#include "sinew/nets/sequential.hpp"
#include "sinew/layers.hpp"
using Net = sinew::Sequential<sinew::Input<1, 28, 28>, sinew::Conv2d<6, 5>, sinew::Dense<10>>;
static_assert(Net::kParams > 0);
