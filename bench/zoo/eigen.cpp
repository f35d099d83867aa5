// bench/zoo/eigen.cpp: the zoo's networks on the Eigen backend (the TensorFlow way), in a translation unit of its
// own so that it compiles beside the OneDnn one.
#include "zoo/measure.hpp"

namespace sinew::bench::zoo {
int measure_eigen(const Config& c) { return measure<backend::Eigen>(c); }
}  // namespace sinew::bench::zoo
