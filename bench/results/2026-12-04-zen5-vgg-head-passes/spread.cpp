// g++ -O3 -march=native -fopenmp -std=c++20 spread.cpp -o spread   (AVX-512: its streaming stores are _mm512)
#include <immintrin.h>
#include <xsimd/xsimd.hpp>
using B = xsimd::batch<float>;
#include <omp.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
constexpr std::size_t O = 4096, C = 512, K = 49, P = O * C;
template <class F> void par(F f) {
#pragma omp parallel
  { int t = omp_get_thread_num(), n = omp_get_num_threads(); f(P * t / n / 16 * 16, t + 1 == n ? P : P * (t + 1) / n / 16 * 16); }
}
int main() {
  float* dw = static_cast<float*>(std::aligned_alloc(64, P * K * 4));
  std::vector<float> df(P, 1.0f);
  std::memset(dw, 0, P * K * 4);
  auto t = [&](auto fn) { std::vector<double> v; for (int r = 0; r < 7; ++r) { auto a = std::chrono::steady_clock::now(); fn(); v.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count()); } std::sort(v.begin(), v.end()); return v[3]; };
  auto cur = [&] { par([&](std::size_t b, std::size_t e) {
    alignas(64) float block[48 * K];
    for (std::size_t first = b; first < e; first += 48) {
      std::size_t planes = std::min<std::size_t>(48, e - first);
      for (std::size_t k = 0; k < planes; ++k) std::fill_n(block + k * K, K, df[first + k]);
      for (std::size_t i = 0; i < planes * K; i += 16) _mm512_stream_ps(dw + first * K + i, _mm512_load_ps(block + i));
    }
    _mm_sfence(); }); };
  auto nt = [&] { par([&](std::size_t b, std::size_t e) { __m512 v = _mm512_set1_ps(1.f); for (std::size_t i = b * K; i < e * K; i += 16) _mm512_stream_ps(dw + i, v); _mm_sfence(); }); };
  auto st = [&] { par([&](std::size_t b, std::size_t e) { __m512 v = _mm512_set1_ps(1.f); for (std::size_t i = b * K; i < e * K; i += 16) _mm512_store_ps(dw + i, v); }); };
  auto sel = [&] { par([&](std::size_t b, std::size_t e) {
    alignas(64) float block[16 * K];
    alignas(64) float lanes[16]; for (int l = 0; l < 16; ++l) lanes[l] = float(l);
    const B lane = B::load_aligned(lanes);
    for (std::size_t first = b; first < e; first += 16) {
      const float* d = df.data() + first;
      for (std::size_t j = 0; j < K; ++j) {
        const std::size_t p = 16 * j / K, edge = K * (p + 1) - 16 * j;  // lanes >= edge belong to plane p + 1
        const B v = edge >= 16 ? B(d[p]) : xsimd::select(lane >= B(float(edge)), B(d[p + 1]), B(d[p]));
        v.store_aligned(block + 16 * j);
      }
      for (std::size_t i = 0; i < 16 * K; i += 16) _mm512_stream_ps(dw + first * K + i, _mm512_load_ps(block + i));
    }
    _mm_sfence(); }); };
  for (int r = 0; r < 2; ++r) {
    double s1 = t(sel); std::printf("select+block %.2f ms (%.0f GB/s)\n", s1 * 1e3, P * K * 4 / 1e9 / s1);
    double a = t(cur), b = t(nt), c = t(st), gb = P * K * 4 / 1e9;
    std::printf("current %.2f ms (%.0f GB/s)  nt-only %.2f (%.0f)  plain store %.2f (%.0f)\n", a * 1e3, gb / a, b * 1e3, gb / b, c * 1e3, gb / c);
  }
}
