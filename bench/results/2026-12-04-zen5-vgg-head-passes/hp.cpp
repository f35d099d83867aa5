// g++ -O3 -march=native -std=c++20 hp.cpp -o hp   (prints xsimd::haddp of 16 vectors whose lane 0 holds 0..15)
#include <xsimd/xsimd.hpp>
#include <cstdio>
using B = xsimd::batch<float>;
int main() { B rows[16]; alignas(64) float t[16];
  for (int c = 0; c < 16; ++c) { for (int l = 0; l < 16; ++l) t[l] = (l == 0) ? float(c) : 0.f; rows[c] = B::load_aligned(t); }
  xsimd::haddp(rows).store_aligned(t); for (float v : t) std::printf("%g ", v); std::printf("\n"); }
