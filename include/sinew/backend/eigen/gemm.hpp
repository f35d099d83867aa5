// sinew/backend/eigen/gemm.hpp: the Eigen backend's matrix kernel, oneDNN's sgemm, as TensorFlow's x86 builds
// run Eigen's contractions.
//
// Why oneDNN's and not Eigen's own. TensorFlow's x86 builds do not contract floats with Eigen's gebp kernel: by
// default (the build option tensorflow_mkldnn_contraction_kernel) Eigen's TensorContraction calls oneDNN's
// dnnl_sgemm on each block it packs (TensorFlow's eigen_contraction_kernel.h). On ResNet-18's convolution shapes
// ([rows, K*K*C] x [K*K*C, O]) Eigen 3.4's gebp is slower than dnnl_sgemm on the same matrices whatever the block
// size or layout, and that kernel alone would keep the Eigen backend's forward convolution well behind oneDNN's
// (figures: bench/README.md, "Why the kernels are as they are"); the algorithms around the kernel (patches
// packed block by block, P^T dZ, dZ W^T then col2im) stay TensorFlow's.
//
// Threads. The Eigen backend runs all its work on the context's Eigen thread pool, and each pool thread calls
// gemm() on its own share. oneDNN's sgemm here is built on OpenMP: a thread outside an OpenMP team would open
// a team of omp_get_max_threads() threads of its own, oversubscribing the cores the pool already uses. So
// gemm() runs single-threaded whoever calls it: it sets the calling thread's OpenMP ICV (nthreads-var) to 1
// for the call and restores it (the pool's threads keep 1 anyway, see binding_environment; the caller of a
// parallelFor, which also runs a share, keeps the context's count for the element-wise kernels).
#pragma once

#include <omp.h>

#include <algorithm>
#include <exception>
#include <mutex>
#include <string>

#include <oneapi/dnnl/dnnl.h>

#include "sinew/backend/eigen/common.hpp"
#include "sinew/core/error.hpp"

namespace sinew::backend::eigen {

/// A row-major matrix operand: its floats, the distance between its rows (leading dimension), and whether
/// the product reads it transposed.
struct gemm_operand {
  const float* data;        ///< the first float of the matrix
  long ld;                  ///< floats from one row to the next (at least the row's length)
  bool transposed = false;  ///< whether the product reads the matrix transposed
};

/// The operand a read as its transpose.
inline gemm_operand transposed(gemm_operand a) {
  a.transposed = !a.transposed;
  return a;
}

/// C[m, n] = alpha * op(A)[m, k] op(B)[k, n] + beta * C, all row-major (ldc between C's rows), on the calling
/// thread alone. A failure (a leading dimension too small) throws backend_error naming the shapes.
inline void gemm(long m, long n, long k, gemm_operand a, gemm_operand b, float* c, long ldc, float alpha = 1.0f,
                 float beta = 0.0f) {
  if (m <= 0 || n <= 0) return;
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (threads != 1) omp_set_num_threads(1);
  const dnnl_status_t status = dnnl_sgemm(a.transposed ? 'T' : 'N', b.transposed ? 'T' : 'N', m, n, k, alpha, a.data,
                                          a.ld, b.data, b.ld, beta, c, ldc);
  if (threads != 1) omp_set_num_threads(threads);
  if (status != dnnl_success)
    throw backend_error("eigen: dnnl_sgemm failed (status " + std::to_string(int(status)) + ") on " +
                        std::to_string(m) + " x " + std::to_string(k) + " by " + std::to_string(k) + " x " +
                        std::to_string(n) + " with leading dimensions " + std::to_string(a.ld) + ", " +
                        std::to_string(b.ld) + ", " + std::to_string(ldc) + "; each must be at least its row's length");
}

/// Calls f(task) for each task in [0, tasks) on the pool's threads while the caller sleeps, so that no more
/// threads work than the pool has (Eigen's parallelFor runs one range on the caller besides the pool's). With one
/// task or a pool of one thread, the caller runs them itself. The first exception a task throws is rethrown here.
template <class F>
void on_pool(const device& dev, index tasks, F&& f) {
  if (tasks <= 1 || dev.numThreads() <= 1) {
    for (index task = 0; task < tasks; ++task) f(task);
    return;
  }
  std::exception_ptr failure;
  std::mutex failure_mutex;
  ::Eigen::Barrier done(static_cast<unsigned>(tasks));
  for (index task = 0; task < tasks; ++task)
    dev.enqueue_with_barrier(&done, [&, task] {
      try {
        f(task);
      } catch (...) {
        const std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    });
  done.Wait();
  if (failure) std::rethrow_exception(failure);
}

/// How many shares for_shares() cuts [0, n) into at most: one per pool thread, fewer where n has fewer
/// granules.
inline index share_count(const device& dev, index n, index granule) {
  return std::clamp<index>(dev.numThreads(), 1, std::max<index>((n + granule - 1) / granule, 1));
}

/// Calls f(share, begin, end) once per share of [0, n) (share_count() of them, numbered from 0), each on a
/// pool thread (see on_pool), each share a multiple of `granule` but the last. `flops` is the work of all of
/// [0, n): below a million, one thread does it all on the caller. Each share is one gemm() call's worth: sgemm
/// packs its operands once per call, so one call per thread packs the least. Returns the number of shares.
template <class F>
index for_shares(const device& dev, index n, index granule, double flops, F&& f) {
  const index granules = (n + granule - 1) / granule, shares = flops < 1e6 ? 1 : share_count(dev, n, granule);
  on_pool(dev, shares, [&](index s) {
    f(s, std::min(n, granules * s / shares * granule), std::min(n, granules * (s + 1) / shares * granule));
  });
  return shares;
}

}  // namespace sinew::backend::eigen
