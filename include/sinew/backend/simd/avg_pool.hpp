// sinew/backend/simd/avg_pool.hpp: average pooling over non-overlapping K x K windows (stride K, no padding) on
// plain NCHW, forward and backward, each plane on one OpenMP thread.
//
// OneDnn's pooling op runs these where oneDNN has no kernel for the layout: plain NCHW of fewer channels than its
// 16-channel block, which is what the thin convolutions (onednn/thin_conv2d.hpp) leave. oneDNN 2.6's jit pooling
// transposes such an input to its blocked layout and back; on LeNet-5's first pooling (42 x 6 x 28 x 28, 2 threads,
// Zen 4) that took 0.065 ms forward and 0.082 backward, where these loops take about 0.015 and 0.017 on one thread.
#pragma once

#include <omp.h>

#include <cstddef>

namespace sinew::simd {

/// y[p, oh, ow] = mean of x[p, oh*K .. oh*K+K-1, ow*K .. ow*K+K-1] for each of `planes` H x W planes; the output is
/// (H / K) x (W / K) (rows or columns past the last whole window are ignored, as a floor-mode pooling does).
inline void avg_pool_forward(const float* x, float* y, std::ptrdiff_t planes, int h, int w, int k, int threads) {
  const int oh = h / k, ow = w / k;
  const float scale = 1.0f / float(k * k);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::ptrdiff_t p = 0; p < planes; ++p) {
    const float* in = x + p * h * w;
    float* out = y + p * oh * ow;
    for (int r = 0; r < oh; ++r, out += ow) {
      if (k == 2) {  // LeNet-5's: the loop the compiler vectorises best
        const float* a = in + 2 * r * w;
        const float* b = a + w;
#pragma omp simd
        for (int c = 0; c < ow; ++c) out[c] = scale * ((a[2 * c] + a[2 * c + 1]) + (b[2 * c] + b[2 * c + 1]));
        continue;
      }
      for (int c = 0; c < ow; ++c) {
        float s = 0;
        for (int i = 0; i < k; ++i)
          for (int j = 0; j < k; ++j) s += in[(r * k + i) * w + c * k + j];
        out[c] = scale * s;
      }
    }
  }
}

/// dx[p, i, j] = dy[p, i / K, j / K] / K^2 inside the windows, 0 in rows or columns past the last whole window.
inline void avg_pool_backward(const float* dy, float* dx, std::ptrdiff_t planes, int h, int w, int k, int threads) {
  const int oh = h / k, ow = w / k;
  const float scale = 1.0f / float(k * k);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::ptrdiff_t p = 0; p < planes; ++p) {
    const float* g = dy + p * oh * ow;
    float* out = dx + p * h * w;
    for (int i = 0; i < h; ++i) {
      float* row = out + i * w;
      if (i >= oh * k) {
        for (int j = 0; j < w; ++j) row[j] = 0;
        continue;
      }
      const float* gr = g + (i / k) * ow;
      if (k == 2) {
#pragma omp simd
        for (int c = 0; c < ow; ++c) row[2 * c] = row[2 * c + 1] = scale * gr[c];
      } else {
        for (int c = 0; c < ow; ++c)
          for (int j = 0; j < k; ++j) row[c * k + j] = scale * gr[c];
      }
      for (int j = ow * k; j < w; ++j) row[j] = 0;
    }
  }
}

}  // namespace sinew::simd
