// Must not compile: LeNet-5 on a 12x12 input pools its 2x2 map... then convolves past the edge.
#include "sinew/nets/lenet5.hpp"
using Net = sinew::nets::LeNet5<sinew::Input<1, 12, 12>>;
static_assert(Net::kParams > 0);
