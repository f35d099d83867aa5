// Build (from the repository root): g++ -std=c++20 -O3 -march=native -fopenmp -Iinclude
//   bench/results/2026-12-05-zen5-sgd-update-memory-floor/update.cpp -o /tmp/update
// Run: OMP_NUM_THREADS=2 /tmp/update [parameters; default 61,000,000, about AlexNet 64x64's]
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
#include <omp.h>
#include <immintrin.h>
#include "sinew/optim/sgd.hpp"
using clk = std::chrono::steady_clock;
int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::atol(argv[1]) : 61'000'000;
  sinew::AlignedBuffer<float> p(n), g(n);
  for (std::size_t i = 0; i < n; ++i) p.data()[i] = 1e-3f * (i % 1000), g.data()[i] = 1e-4f * (i % 777);
  sinew::optim::Sgd sgd({0.01f, 0.9f, 0.0f, 5e-4f, false}, n);
  sinew::AlignedBuffer<float> b(n);
  for (std::size_t i = 0; i < n; ++i) b.data()[i] = 0;
  auto time = [&](auto&& f) { std::vector<double> t; for (int r = 0; r < 15; ++r) { auto s = clk::now(); f(); t.push_back(std::chrono::duration<double, std::milli>(clk::now() - s).count()); } std::sort(t.begin(), t.end()); return t[t.size()/2]; };
  for (int round = 0; round < 3; ++round) {
  double ts = time([&] { sgd.step(p.span(), g.span()); });
  // floor: read 3, write 2, no arithmetic dependence beyond one fma
  double tf = time([&] {
    float* pp = p.data(); const float* gp = g.data(); float* bp = b.data();
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < n; i += 16) {
      __m512 x = _mm512_load_ps(pp + i), y = _mm512_load_ps(gp + i), z = _mm512_load_ps(bp + i);
      z = _mm512_fmadd_ps(_mm512_set1_ps(0.9f), z, _mm512_fmadd_ps(_mm512_set1_ps(5e-4f), x, y));
      _mm512_store_ps(bp + i, z);
      _mm512_store_ps(pp + i, _mm512_fmadd_ps(_mm512_set1_ps(-0.01f), z, x));
    }
  });
  double tn = time([&] {
    float* pp = p.data(); const float* gp = g.data(); float* bp = b.data();
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < n; i += 16) {
      __m512 x = _mm512_load_ps(pp + i), y = _mm512_load_ps(gp + i), z = _mm512_load_ps(bp + i);
      z = _mm512_fmadd_ps(_mm512_set1_ps(0.9f), z, _mm512_fmadd_ps(_mm512_set1_ps(5e-4f), x, y));
      _mm512_stream_ps(bp + i, z);
      _mm512_stream_ps(pp + i, _mm512_fmadd_ps(_mm512_set1_ps(-0.01f), z, x));
    }
    _mm_sfence();
  });
  double tr = time([&] {
    const float* pp = p.data(); const float* gp = g.data(); const float* bp = b.data();
    float tot = 0;
#pragma omp parallel reduction(+:tot)
    { __m512 acc = _mm512_setzero_ps();
#pragma omp for schedule(static)
    for (std::size_t i = 0; i < n; i += 16) acc = _mm512_add_ps(acc, _mm512_add_ps(_mm512_load_ps(pp + i), _mm512_add_ps(_mm512_load_ps(gp + i), _mm512_load_ps(bp + i))));
    tot += _mm512_reduce_add_ps(acc); }
    volatile float s = tot; (void)s;
  });
  double gb = n * 4.0 / 1e9;
  std::printf("n %zu threads %d: sgd.step %.2f ms (%.1f GB/s of 5 streams), intrinsics %.2f ms, streaming %.2f ms, read 3 only %.2f ms (%.1f GB/s)\n", n, omp_get_max_threads(), ts, 5*gb/ts*1e3, tf, tn, tr, 3*gb/tr*1e3);
  }
}
