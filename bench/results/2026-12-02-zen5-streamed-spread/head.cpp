// VGG-16's classifier head at 32x32 (the 512 x 1 x 1 features pooled to 7 x 7, 25088 -> 4096 -> 10) as a Model on
// OneDnn, batch 42, 2 threads: milliseconds of forward + loss + backward, the median of 15 steps after 3 untimed.
// The backward's spread writes the 411 MB weight gradient. Built against two include trees to compare them:
//   g++ -std=c++20 -O3 -march=native -fopenmp -I<tree>/include -I/usr/include/eigen3 head.cpp -o head-<name> -ldnnl
#include "sinew/backend/onednn.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "sinew/layers.hpp"
#include "sinew/model.hpp"
#include "sinew/nets/sequential.hpp"

using namespace sinew;
using Head = Sequential<Input<512, 1, 1>, AdaptiveAvgPool<7>, Flatten, Dense<4096>, ReLU, Dense<10>>;

int main() {
  backend::OneDnn::context ctx({.threads = 2});
  Model<Head, backend::OneDnn> model(ctx);
  constexpr int kBatch = 42;
  std::vector<float> x(std::size_t(kBatch) * 512, 0.5f);
  std::vector<std::int32_t> y(kBatch);
  for (int i = 0; i < kBatch; ++i) y[std::size_t(i)] = i % 10;
  std::vector<double> ms;
  for (int step = 0; step < 18; ++step) {
    model.parameters();  // marks the weights changed, as the optimizer would: the fold runs every step
    const auto t = std::chrono::steady_clock::now();
    model.forward(x, kBatch);
    model.loss(y);
    model.backward();
    if (step >= 3) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("head step %.2f ms (median of %zu; fastest %.2f)\n", ms[ms.size() / 2], ms.size(), ms.front());
}
