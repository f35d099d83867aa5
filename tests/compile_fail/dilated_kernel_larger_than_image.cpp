// Must not compile: a 3x3 kernel at dilation 2 covers 5x5 pixels, more than a 4x4 image.
#include "sinew/nets/sequential.hpp"
#include "sinew/layers.hpp"
using Net = sinew::Sequential<sinew::Input<1, 4, 4>, sinew::Conv2d<2, 3, 1, 0, true, 2>, sinew::Flatten, sinew::Dense<10>>;
static_assert(Net::kParams > 0);
