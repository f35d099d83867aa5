// Must not compile: a 7x7 kernel on a 4x4 image.
#include "sinew/nets/sequential.hpp"
#include "sinew/layers.hpp"
using Net = sinew::Sequential<sinew::Input<1, 4, 4>, sinew::Conv2d<6, 7>, sinew::Flatten, sinew::Dense<10>>;
static_assert(Net::kParams > 0);
