// sinew/backend/simd/avg_pool.hpp: average pooling over non-overlapping K x K windows (stride K, no padding) on
// plain NCHW, forward and backward, on OpenMP threads.
//
// OneDnn's pooling op runs these on plain NCHW of at most 16 channels, which is what the thin convolutions
// (onednn/thin_conv2d.hpp) leave and where oneDNN 2.6's jit pooling transposes to its blocked layout and back,
// several times slower on LeNet-5's poolings (figures: bench/README.md, "Why the kernels are as they are").
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstddef>

namespace sinew::simd {

namespace detail {

/// Floats of the stack buffer each thread of for_row_chunks gets: 16 KiB, in L1.
inline constexpr int kRowChunkBuffer = 4096;

/// Calls f(buffer, q0, q1) on chunks [q0, q1) of `rows` output rows, each thread over a contiguous share, with a
/// buffer of kRowChunkBuffer floats on the thread's stack for as many rows of `span` floats as it holds.
template <class F>
void for_row_chunks(std::ptrdiff_t rows, int span, int threads, F&& f) {
  const int rows_per_chunk = std::max(1, kRowChunkBuffer / span);
#pragma omp parallel num_threads(threads)
  {
    alignas(64) float buffer[kRowChunkBuffer];
    const std::ptrdiff_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const std::ptrdiff_t end = rows * (t + 1) / nt;
    for (std::ptrdiff_t q0 = rows * t / nt; q0 < end; q0 += rows_per_chunk)
      f(buffer, q0, std::min<std::ptrdiff_t>(end, q0 + rows_per_chunk));
  }
}

}  // namespace detail

/// y[p, oh, ow] = mean of x[p, oh*K .. oh*K+K-1, ow*K .. ow*K+K-1] for each of `planes` H x W planes; the output is
/// (H / K) x (W / K) (rows or columns past the last whole window are ignored, as a floor-mode pooling does).
/// K = 2 (LeNet-5's) runs in two passes per chunk of output rows: each pair of input rows summed into a buffer on
/// the thread's stack, then adjacent pairs of that buffer summed as one flat loop over the chunk. Rows of 5 to 14
/// outputs are too short to vectorise one by one (the two passes are much the faster on LeNet-5's first
/// pooling).
inline void avg_pool_forward(const float* x, float* y, std::ptrdiff_t planes, int h, int w, int k, int threads) {
  const int oh = h / k, ow = w / k;
  const float scale = 1.0f / float(k * k);
  if (k == 2 && 2 * ow <= detail::kRowChunkBuffer) {  // else rows too wide for the buffer: the general loop
    const int span = 2 * ow;
    detail::for_row_chunks(planes * oh, span, threads, [&](float* sums, std::ptrdiff_t q0, std::ptrdiff_t q1) {
      for (std::ptrdiff_t q = q0; q < q1; ++q) {  // output row q: plane q / oh, row q % oh
        const float* a = x + (q / oh * h + 2 * (q % oh)) * std::ptrdiff_t(w);
        const float* b = a + w;
        float* o = sums + (q - q0) * span;
#pragma omp simd
        for (int j = 0; j < span; ++j) o[j] = a[j] + b[j];
      }
      float* out = y + q0 * ow;
      const std::ptrdiff_t n = (q1 - q0) * ow;
#pragma omp simd
      for (std::ptrdiff_t m = 0; m < n; ++m) out[m] = scale * (sums[2 * m] + sums[2 * m + 1]);
    });
    return;
  }
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::ptrdiff_t p = 0; p < planes; ++p) {
    const float* in = x + p * h * w;
    float* out = y + p * oh * ow;
    for (int r = 0; r < oh; ++r, out += ow)
      for (int c = 0; c < ow; ++c) {
        float s = 0;
        for (int i = 0; i < k; ++i)
          for (int j = 0; j < k; ++j) s += in[(r * k + i) * w + c * k + j];
        out[c] = scale * s;
      }
  }
}

/// avg_pool_forward's sums, on the calling thread alone, over planes whose rows lie `row_stride` floats apart and
/// which lie `plane_stride` floats apart (a kernel's padded rows: columns past W are read by no window); y dense. The
/// same additions in the same order as avg_pool_forward, so the same results: what a fused op runs on one image's
/// planes inside its own parallel region (onednn/thin_conv2d.hpp).
inline void avg_pool_forward_strided(const float* x, std::ptrdiff_t row_stride, std::ptrdiff_t plane_stride, float* y,
                                     std::ptrdiff_t planes, int h, int w, int k) {
  const int oh = h / k, ow = w / k;
  const float scale = 1.0f / float(k * k);
  for (std::ptrdiff_t p = 0; p < planes; ++p)
    for (int r = 0; r < oh; ++r) {
      const float* a = x + p * plane_stride + std::ptrdiff_t(r) * k * row_stride;
      float* out = y + (p * oh + r) * ow;
      if (k == 2) {
        const float* b = a + row_stride;
#pragma omp simd
        for (int m = 0; m < ow; ++m) out[m] = 0.25f * ((a[2 * m] + b[2 * m]) + (a[2 * m + 1] + b[2 * m + 1]));
        continue;
      }
      for (int c = 0; c < ow; ++c) {
        float sum = 0;
        for (int i = 0; i < k; ++i)
          for (int j = 0; j < k; ++j) sum += a[i * row_stride + c * k + j];
        out[c] = scale * sum;
      }
    }
}

/// dx[p, i, j] = dy[p, i / K, j / K] / K^2 inside the windows, 0 in rows or columns past the last whole window.
/// K = 2 runs as the forward's two passes reversed: each chunk of output rows spread over a flat buffer, then
/// each spread row copied to its two input rows.
inline void avg_pool_backward(const float* dy, float* dx, std::ptrdiff_t planes, int h, int w, int k, int threads) {
  const int oh = h / k, ow = w / k;
  const float scale = 1.0f / float(k * k);
  // Rows and columns past the last whole window get no gradient.
  const auto zero_rest = [&](std::ptrdiff_t p) {
    float* plane = dx + p * h * w;
    if (ow * k < w)
      for (int i = 0; i < oh * k; ++i) std::fill(plane + i * w + ow * k, plane + (i + 1) * w, 0.0f);
    std::fill(plane + oh * k * w, plane + h * w, 0.0f);
  };
  if (k == 2 && 2 * ow <= detail::kRowChunkBuffer) {  // else rows too wide for the buffer: the general loop
    const int span = 2 * ow;
    detail::for_row_chunks(planes * oh, span, threads, [&](float* spread, std::ptrdiff_t q0, std::ptrdiff_t q1) {
      const float* g = dy + q0 * ow;
      const std::ptrdiff_t n = (q1 - q0) * ow;
#pragma omp simd
      for (std::ptrdiff_t m = 0; m < n; ++m) spread[2 * m] = spread[2 * m + 1] = scale * g[m];
      for (std::ptrdiff_t q = q0; q < q1; ++q) {
        float* a = dx + (q / oh * h + 2 * (q % oh)) * std::ptrdiff_t(w);
        const float* src = spread + (q - q0) * span;
        std::copy(src, src + span, a);
        std::copy(src, src + span, a + w);
      }
    });
    if (oh * k < h || ow * k < w) {
#pragma omp parallel for schedule(static) num_threads(threads)
      for (std::ptrdiff_t p = 0; p < planes; ++p) zero_rest(p);
    }
    return;
  }
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::ptrdiff_t p = 0; p < planes; ++p) {
    const float* g = dy + p * oh * ow;
    float* plane = dx + p * h * w;
    for (int i = 0; i < oh * k; ++i)
      for (int c = 0; c < ow; ++c)
        for (int j = 0; j < k; ++j) plane[i * w + c * k + j] = scale * g[(i / k) * ow + c];
    zero_rest(p);
  }
}

}  // namespace sinew::simd
