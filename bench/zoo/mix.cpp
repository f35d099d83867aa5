// bench/zoo/mix.cpp: ResNet-18 on two backend::Mix (backend/mix.hpp), to show the cost of the layout conversions
// between two backends ("reorder" in the operator profile, printed with --profile):
//   onednn+eigen_bn     oneDNN with Eigen's BatchNorm2d: every BatchNorm sits between two oneDNN convolutions,
//                       so each crosses twice (blocked -> plain -> NHWC and back) in both passes;
//   eigen+onednn_conv   the TensorFlow question: Eigen with oneDNN's convolutions and nothing else.
#include "zoo/measure.hpp"

#include "sinew/backend/mix.hpp"

namespace sinew::bench::zoo {
using OneDnnWithEigenBatchNorm = backend::Mix<backend::OneDnn, backend::Use<BatchNorm2d, backend::Eigen>>;
using EigenWithOneDnnConv = backend::Mix<backend::Eigen, backend::Use<layer_kind::conv2d, backend::OneDnn>>;

int measure_mix(const Config& c, const std::string& backend) {
  if (backend == "onednn+eigen_bn") return measure<OneDnnWithEigenBatchNorm, true>(c);
  if (backend == "eigen+onednn_conv") return measure<EigenWithOneDnnConv, true>(c);
  std::fprintf(stderr, "zoo: unknown backend %s\n", backend.c_str());
  return 2;
}
}  // namespace sinew::bench::zoo
