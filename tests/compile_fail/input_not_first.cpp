// Must not compile: Sequential's first element must be Input<C, H, W>.
#include "sinew/nets/sequential.hpp"
#include "sinew/layers.hpp"
using Net = sinew::Sequential<sinew::Conv2d<6, 5>, sinew::Flatten>;
static_assert(Net::kParams > 0);
