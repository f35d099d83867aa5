// sinew/core/parallel.hpp: splitting element-wise work over the OpenMP threads that oneDNN also uses.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <span>

#include "sinew/core/affinity.hpp"

namespace sinew {

/// Calls f(begin, end) on disjoint ranges covering [0, n), in parallel when n is large enough to pay for
/// waking the threads. Range boundaries are multiples of `align` elements (keeps SIMD loads aligned).
template <class F>
void parallel_ranges(std::size_t n, F&& f, std::size_t align = 16, std::size_t min_per_thread = 1 << 15) {
  const int threads = std::min<std::size_t>(omp_get_max_threads(), std::max<std::size_t>(1, n / min_per_thread));
  if (threads <= 1) {
    f(std::size_t(0), n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const std::size_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const std::size_t chunk = ((n + nt - 1) / nt + align - 1) / align * align;  // every element: round n / nt up
    const std::size_t begin = std::min(n, t * chunk), end = std::min(n, begin + chunk);
    if (begin < end) f(begin, end);
  }
}

/// The smallest share of an optimizer's update (optim/) worth a thread of its own. An element reads three or four
/// arrays and writes two, and the backward pass left half of the gradients in the other core's cache, so the
/// split pays from a few thousand elements: LeNet-5's 62,006 parameters update in 0.013 ms on 2 threads against
/// 0.022 on one (bench/results/2026-12-01-zen4-lenet5-vcpu-placement).
inline constexpr std::size_t kUpdateGrain = std::size_t(1) << 12;

/// Holds the OpenMP regions the calling thread starts (oneDNN's included) to one thread while it lives, when
/// `engaged`: for passes too small to pay for waking another thread, whose primitives are also created in its
/// scope (oneDNN fixes a primitive's thread count when it creates it). Restores the thread count it found.
class serial_scope {
 public:
  /// Holds the thread count to one from here, when `engaged` (else changes nothing).
  explicit serial_scope(bool engaged = true) : restore_(engaged ? omp_get_max_threads() : 0) {
    if (restore_ > 1) omp_set_num_threads(1);
  }
  ~serial_scope() {
    if (restore_ > 1) omp_set_num_threads(restore_);
  }
  serial_scope(const serial_scope&) = delete;
  serial_scope& operator=(const serial_scope&) = delete;

 private:
  int restore_;
};

/// Starts `threads` OpenMP threads and binds thread t > 0 to cpus[t % cpus.size()]; the calling thread (thread
/// 0) keeps its mask. Later parallel regions of at most `threads` threads reuse the bound threads (libgomp keeps
/// its pool). Nothing is bound when `cpus` is empty.
inline void bind_openmp_threads(int threads, std::span<const int> cpus) {
  if (cpus.empty() || threads <= 1) return;
#pragma omp parallel num_threads(threads)
  {
    const std::size_t t = std::size_t(omp_get_thread_num());
    if (t > 0) bind_this_thread(cpus.subspan(t % cpus.size(), 1));
  }
}

}  // namespace sinew
