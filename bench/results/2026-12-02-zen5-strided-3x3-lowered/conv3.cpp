// Three of ResNet's 3x3 layers on 32x32 inputs at batch 42 on OneDnn, 2 threads, each after a 1x1 layer and before
// a Dense: the layer's forward and backward in ms per call (OperatorProfile, reset after 5 warm-up steps; the median
// and fastest of 7 runs of 20 steps). Built against a scratch tree whose on_avx2_conv2d_op took its AVX2 form on
// AVX-512 too when SINEW_FORCE_LOWERED / SINEW_FORCE_WINOGRAD was set (3e35846 plus that getenv; not committed):
//   g++ -std=c++20 -O3 -march=native -fopenmp -I<tree>/include -I/usr/include/eigen3 conv3.cpp -o conv3 -ldnnl
//   ./conv3; SINEW_FORCE_LOWERED=1 SINEW_FORCE_WINOGRAD=1 ./conv3
#include "sinew/backend/onednn.hpp"
#include <algorithm>
#include <cstdio>
#include <vector>
#include "sinew/layers.hpp"
#include "sinew/metrics/profile.hpp"
#include "sinew/model.hpp"
#include "sinew/nets/sequential.hpp"
using namespace sinew;
template <class Net, int InSize>
void run(const char* name) {
  backend::OneDnn::context ctx({.threads = 2});
  constexpr int kBatch = 42;
  std::vector<float> x(std::size_t(kBatch) * InSize);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i % 13) * 0.1f;
  std::vector<std::int32_t> y(kBatch);
  for (int i = 0; i < kBatch; ++i) y[std::size_t(i)] = i % 10;
  std::vector<double> fwd, bwd;
  for (int run = 0; run < 7; ++run) {
    Model<Net, backend::OneDnn, metrics::OperatorProfile> model(ctx);
    for (int step = 0; step < 25; ++step) {
      if (step == 5) model.profile().reset();
      model.forward(x, kBatch); model.loss(y); model.backward();
    }
    const auto& n = model.profile().nodes()[1];
    fwd.push_back(n.forward_seconds / double(n.forward_calls) * 1e3);
    bwd.push_back(n.backward_seconds / double(n.backward_calls) * 1e3);
  }
  std::sort(fwd.begin(), fwd.end()); std::sort(bwd.begin(), bwd.end());
  std::printf("%s: fwd %.3f bwd %.3f ms (min %.3f %.3f)\n", name, fwd[3], bwd[3], fwd[0], bwd[0]);
}
int main() {
  run<Sequential<Input<128, 8, 8>, Conv2d<128, 1, 1, 0, false>, Conv2d<128, 3, 2, 1, false>, Flatten, Dense<10>>, 128 * 64>("128 8x8->4x4 s2");
  run<Sequential<Input<256, 4, 4>, Conv2d<256, 1, 1, 0, false>, Conv2d<256, 3, 2, 1, false>, Flatten, Dense<10>>, 256 * 16>("256 4x4->2x2 s2");
  run<Sequential<Input<128, 4, 4>, Conv2d<128, 1, 1, 0, false>, Conv2d<128, 3, 1, 1, false>, Flatten, Dense<10>>, 128 * 16>("128 4x4 s1 (winograd class)");
}
