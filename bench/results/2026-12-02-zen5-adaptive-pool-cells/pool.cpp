// AlexNet's enlarging pool (256 x 1 x 1 -> 6 x 6) at batch 42 on OneDnn, 2 threads: the op's forward and backward
// in ms per call (OperatorProfile), the median of 9 runs of 20 steps. A 1x1 convolution before it, so that its
// backward runs; Dropout and a Dense after it, as in AlexNet (a Dense right after it would fold the pool away).
// Built against two include trees to compare them:
//   g++ -std=c++20 -O3 -march=native -fopenmp -I<tree>/include -I/usr/include/eigen3 pool.cpp -o pool-<name> -ldnnl
#include "sinew/backend/onednn.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "sinew/layers.hpp"
#include "sinew/metrics/profile.hpp"
#include "sinew/model.hpp"
#include "sinew/nets/sequential.hpp"

using namespace sinew;
using Head = Sequential<Input<256, 1, 1>, Conv2d<256, 1>, AdaptiveAvgPool<6, 6>, Flatten, Dropout<50>, Dense<10>>;

int main() {
  backend::OneDnn::context ctx({.threads = 2});
  constexpr int kBatch = 42;
  std::vector<float> x(std::size_t(kBatch) * 256);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i % 13) * 0.1f;
  std::vector<std::int32_t> y(kBatch);
  for (int i = 0; i < kBatch; ++i) y[std::size_t(i)] = i % 10;
  std::vector<double> fwd, bwd;
  for (int run = 0; run < 9; ++run) {
    Model<Head, backend::OneDnn, metrics::OperatorProfile> model(ctx);
    for (int step = 0; step < 20; ++step) {
      model.forward(x, kBatch);
      model.loss(y);
      model.backward();
    }
    const auto& pool = model.profile().nodes()[1];
    fwd.push_back(pool.forward_seconds / double(pool.forward_calls) * 1e3);
    bwd.push_back(pool.backward_seconds / double(pool.backward_calls) * 1e3);
  }
  std::sort(fwd.begin(), fwd.end());
  std::sort(bwd.begin(), bwd.end());
  std::printf("%s: forward %.3f ms, backward %.3f ms (medians of 9; fastest %.3f, %.3f)\n",
              Model<Head, backend::OneDnn>::node_names()[1].c_str(), fwd[4], bwd[4], fwd[0], bwd[0]);
}
