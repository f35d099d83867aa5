// Must not compile: a strided main branch with an identity shortcut.
#include "sinew/layers.hpp"
#include "sinew/nets/sequential.hpp"
using Net = sinew::Sequential<sinew::Input<8, 8, 8>, sinew::Residual<sinew::Chain<sinew::Conv2d<8, 3, 2, 1>>>>;
static_assert(Net::kParams > 0);
