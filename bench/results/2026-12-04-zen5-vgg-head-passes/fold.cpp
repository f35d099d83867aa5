// g++ -O3 -march=native -fopenmp -std=c++20 fold.cpp -o fold
#include <xsimd/xsimd.hpp>
#include <omp.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cmath>
using B = xsimd::batch<float>;
constexpr std::size_t O = 4096, C = 512, K = 49, P = O * C;
static float sum8(const float* x, std::size_t n) {
  float acc[8] = {};
  std::size_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (std::size_t l = 0; l < 8; ++l) acc[l] += x[k + l];
  for (; k < n; ++k) acc[0] += x[k];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}
template <class F> void par(F f) {
#pragma omp parallel
  { int t = omp_get_thread_num(), n = omp_get_num_threads(); f(P * t / n / 16 * 16, t + 1 == n ? P : P * (t + 1) / n / 16 * 16); }
}
void fold_a(const float* w, float* f) { par([&](std::size_t b, std::size_t e) { for (std::size_t p = b; p < e; ++p) f[p] = sum8(w + p * K, K); }); }
void fold_b(const float* w, float* f) {
  par([&](std::size_t b, std::size_t e) {
    for (std::size_t p = b; p < e; p += 16) {
      const float* x = w + p * K;
      B rows[16]; alignas(64) float tail[16];
      for (int c = 0; c < 16; ++c) {
        const float* r = x + c * K;
        rows[c] = B::load_unaligned(r) + B::load_unaligned(r + 16) + B::load_unaligned(r + 32);
        tail[c] = r[48];
      }
      (xsimd::haddp(rows) + B::load_aligned(tail)).store_unaligned(f + p);
    }
  });
}
void fold_c(const float* w, float* f) {
  par([&](std::size_t b, std::size_t e) {
    for (std::size_t p = b; p < e; ++p) {
      const float* r = w + p * K;
      f[p] = xsimd::hadd(B::load_unaligned(r) + B::load_unaligned(r + 16) + B::load_unaligned(r + 32)) + r[48];
    }
  });
}
float readall(const float* w) {
  float s[64] = {};
  par([&](std::size_t b, std::size_t e) {
    B a0(0.f), a1(0.f), a2(0.f), a3(0.f);
    for (std::size_t i = b * K; i < e * K; i += 64) { a0 += B::load_aligned(w + i); a1 += B::load_aligned(w + i + 16); a2 += B::load_aligned(w + i + 32); a3 += B::load_aligned(w + i + 48); }
    s[omp_get_thread_num()] = xsimd::hadd(a0 + a1 + a2 + a3);
  });
  return s[0] + s[1];
}
int main() {
  float* w = static_cast<float*>(std::aligned_alloc(64, P * K * 4));
  std::vector<float> fa(P), fb(P), fc(P);
  par([&](std::size_t b, std::size_t e) { for (std::size_t i = b * K; i < e * K; ++i) w[i] = float(i % 1013) * 1e-3f - 0.5f; });
  auto t = [&](auto fn) { std::vector<double> v; for (int r = 0; r < 9; ++r) { auto a = std::chrono::steady_clock::now(); fn(); v.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count()); } std::sort(v.begin(), v.end()); return v[4]; };
  for (int round = 0; round < 2; ++round) {
    double ta = t([&] { fold_a(w, fa.data()); }), tb = t([&] { fold_b(w, fb.data()); }), tc = t([&] { fold_c(w, fc.data()); });
    volatile float sink; double tr = t([&] { sink = readall(w); });
    double gb = P * K * 4 / 1e9;
    std::printf("current %.2f ms (%.0f GB/s)  haddp16 %.2f ms (%.0f)  per-plane %.2f ms (%.0f)  read %.2f ms (%.0f)\n", ta * 1e3, gb / ta, tb * 1e3, gb / tb, tc * 1e3, gb / tc, tr * 1e3, gb / tr);
  }
  double md = 0; for (std::size_t p = 0; p < P; ++p) md = std::max({md, double(std::fabs(fa[p] - fb[p])), double(std::fabs(fa[p] - fc[p]))});
  double mb=0,mc=0; std::size_t at=0; for (std::size_t p = 0; p < P; ++p) { if (std::fabs(fa[p]-fb[p])>mb) {mb=std::fabs(fa[p]-fb[p]); at=p;} mc=std::max(mc,double(std::fabs(fa[p]-fc[p]))); }
  std::printf("max diff b %.3g at %zu (%g vs %g) c %.3g\n", mb, at, fa[at], fb[at], mc);
}
