// The spread of VGG-16's folded head alone: a [4096 x 512] gradient dF written 49 times over into the
// [4096 x 25088] weight gradient (411 MB), on 2 OpenMP threads, best of 7 calls each, against memset of the same
// array (with zero, which this CPU writes faster, and with a non-zero byte):
//   fill      std::fill_n of each plane's 49 cells in place (sinew before)
//   stream    each block of 48 planes (whole cache lines) filled in a stack buffer, then copied out with 16-byte non-temporal stores
//             (simd::stream_copy: sinew after; 64-byte stores in this -march=native build)
//   sse       the same with 16-byte non-temporal stores (what any x86-64 build has)
// and the fold before the forward (sinew's eight-chain sum over each plane's 49 cells) against a plain sum of the
// array:
//   g++ -std=c++20 -O3 -march=native -fopenmp -I../../../include spread.cpp -o spread
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "sinew/core/elementwise.hpp"
#include "sinew/core/parallel.hpp"
#include "sinew/core/streaming_store.hpp"
#include "sinew/tensor/buffer.hpp"

using namespace sinew;
constexpr std::size_t kPlanes = 4096 * 512, kCells = 49, kBlock = 48;

template <class F>
double best_ms(F f) {
  double best = 1e9;
  for (int r = 0; r < 7; ++r) {
    const auto t = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count());
  }
  return best;
}

int main() {
  AlignedBuffer<float> dw(kPlanes * kCells), df(kPlanes);
  for (std::size_t p = 0; p < kPlanes; ++p) df.data()[p] = float(p % 91);
  const float* f = df.data();
  float* w = dw.data();
  bool ok = true;
  auto check = [&] {
    for (std::size_t p = 0; p < kPlanes; p += 4099)
      for (std::size_t k = 0; k < kCells; ++k) ok &= w[p * kCells + k] == f[p];
    std::memset(w, 0, kPlanes * kCells * sizeof(float));
  };
  const double fill = best_ms([&] {
    parallel_ranges(kPlanes, [&](std::size_t b, std::size_t e) {
      for (std::size_t p = b; p < e; ++p) std::fill_n(w + p * kCells, kCells, f[p]);
    }, 1, 1);
  });
  check();
  auto blocked = [&](auto copy) {
    return best_ms([&] {
      parallel_ranges(kPlanes, [&](std::size_t b, std::size_t e) {
        alignas(64) float block[kBlock * kCells];
        for (std::size_t p = b; p < e; p += kBlock) {
          const std::size_t n = std::min(kBlock, e - p);
          for (std::size_t q = 0; q < n; ++q) std::fill_n(block + q * kCells, kCells, f[p + q]);
          copy(w + p * kCells, block, n * kCells);
        }
        simd::stream_fence();
      }, 16, 1);
    });
  };
  const double stream = blocked([](float* d, const float* s, std::size_t n) { simd::stream_copy(d, s, n); });
  check();
  const double sse = blocked([](float* d, const float* s, std::size_t n) {
    std::size_t i = 0;
    for (; i < n && reinterpret_cast<std::uintptr_t>(d + i) % 16 != 0; ++i) d[i] = s[i];
    for (; i + 4 <= n; i += 4) _mm_stream_ps(d + i, _mm_loadu_ps(s + i));
    for (; i < n; ++i) d[i] = s[i];
  });
  check();
  const double zero = best_ms([&] {
    parallel_ranges(kPlanes * kCells, [&](std::size_t b, std::size_t e) { std::memset(w + b, 0, (e - b) * 4); }, 64, 1);
  });
  const double one = best_ms([&] {
    parallel_ranges(kPlanes * kCells, [&](std::size_t b, std::size_t e) { std::memset(w + b, 1, (e - b) * 4); }, 64, 1);
  });
  // The fold: sinew's sum over a plane's cells (pooled_dense_op::sum), against one sum over the whole array.
  float* folded = df.data();
  const double fold = best_ms([&] {
    parallel_ranges(kPlanes, [&](std::size_t b, std::size_t e) {
      for (std::size_t p = b; p < e; ++p) {
        const float* x = w + p * kCells;
        float acc[8] = {};
        std::size_t k = 0;
        for (; k + 8 <= kCells; k += 8)
          for (std::size_t l = 0; l < 8; ++l) acc[l] += x[k + l];
        for (; k < kCells; ++k) acc[0] += x[k];
        folded[p] = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
      }
    }, 1, 1);
  });
  float sums[64] = {};
  const double read = best_ms([&] {
    parallel_ranges(kPlanes * kCells, [&](std::size_t b, std::size_t e) {
      sums[omp_get_thread_num() % 64] = simd::sum(w + b, e - b);
    }, 64, 1);
  });
  const double mb = double(kPlanes * kCells * sizeof(float)) / 1e6;
  std::printf("fill %.2f ms (%.0f GB/s)  stream %.2f (%.0f)  sse %.2f (%.0f)  memset0 %.2f (%.0f)  memset1 %.2f (%.0f)%s\n",
              fill, mb / fill, stream, mb / stream, sse, mb / sse, zero, mb / zero, one, mb / one,
              ok ? "" : "  WRONG RESULT");
  std::printf("            fold %.2f ms (%.0f GB/s)  plain sum %.2f (%.0f)%s\n", fold, mb / fold, read, mb / read,
              sums[0] == 12345.0f ? " " : "");
  return ok ? 0 : 1;
}
