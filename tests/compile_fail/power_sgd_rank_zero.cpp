// Must not compile: a rank-0 approximation sends nothing.
#include "sinew/compress/power_sgd.hpp"
sinew::compress::PowerSgd<0> c;
