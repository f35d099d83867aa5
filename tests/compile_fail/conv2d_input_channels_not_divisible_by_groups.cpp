// Must not compile: 6 input channels in 4 groups.
#include "sinew/nets/sequential.hpp"
#include "sinew/layers.hpp"
using Net = sinew::Sequential<sinew::Input<6, 8, 8>, sinew::Conv2d<8, 3, 1, 1, true, 1, 4>>;
static_assert(Net::kParams > 0);
