// bench/support/bandwidth.hpp: the machine's measured memory bandwidth on a thread count, as the benchmarks'
// denominator of "share of bandwidth" for nets that memory bounds (MobileNetV2), in the same run as the figures it
// divides: STREAM's triad a[i] = b[i] + s * c[i] over arrays far larger than the caches, counted as STREAM counts
// it (two floats read, one written; the write-allocate read is not counted).
#pragma once

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <memory>

namespace sinew::bench {

/// GB/s of the best of `repeats` timed triads (after one untimed) over three arrays of `floats` floats each,
/// on `threads` OpenMP threads, each thread touching first the part it later works on.
inline double triad_bandwidth_gbps(int threads, std::size_t floats = std::size_t(1) << 25, int repeats = 5) {
  if (threads > 0) omp_set_num_threads(threads);
  const auto a = std::make_unique_for_overwrite<float[]>(floats);
  const auto b = std::make_unique_for_overwrite<float[]>(floats);
  const auto c = std::make_unique_for_overwrite<float[]>(floats);
  float* const pa = a.get();
  const float* const pb = b.get();
  const float* const pc = c.get();
  const long n = long(floats);
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) pa[i] = 0.0f, b[i] = 1.0f, c[i] = 2.0f;
  double best = 1e300;
  for (int r = 0; r <= repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const float s = 0.5f + float(r);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) pa[i] = pb[i] + s * pc[i];
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) best = std::min(best, t);
  }
  // Keeps the stores: a result the compiler cannot know.
  if (pa[n / 2] != pb[n / 2] + (0.5f + float(repeats)) * pc[n / 2]) return 0.0;
  return 3.0 * 4.0 * double(floats) / best / 1e9;
}

}  // namespace sinew::bench
