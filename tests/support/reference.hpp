// tests/support/reference.hpp: naive, obviously-correct forward computations in double precision, against
// which the backends' forward passes are checked (the gradient harness then checks their backward passes).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace sinew::test::reference {

/// x [N, C, H, W], w [O, C, K, K], b [O] -> [N, O, OH, OW]
inline std::vector<double> conv2d(const std::vector<float>& x, const float* w, const float* b, int n, int c, int h,
                                  int wd, int o, int k, int stride, int pad) {
  const int oh = (h + 2 * pad - k) / stride + 1, ow = (wd + 2 * pad - k) / stride + 1;
  std::vector<double> y(std::size_t(n) * o * oh * ow);
  for (int in = 0; in < n; ++in)
    for (int io = 0; io < o; ++io)
      for (int y0 = 0; y0 < oh; ++y0)
        for (int x0 = 0; x0 < ow; ++x0) {
          double s = b ? b[io] : 0.0;
          for (int ic = 0; ic < c; ++ic)
            for (int ky = 0; ky < k; ++ky)
              for (int kx = 0; kx < k; ++kx) {
                const int yy = y0 * stride - pad + ky, xx = x0 * stride - pad + kx;
                if (yy < 0 || yy >= h || xx < 0 || xx >= wd) continue;
                s += double(x[((std::size_t(in) * c + ic) * h + yy) * wd + xx]) *
                     w[((std::size_t(io) * c + ic) * k + ky) * k + kx];
              }
          y[((std::size_t(in) * o + io) * oh + y0) * ow + x0] = s;
        }
  return y;
}

/// x [N, I], w [O, I], b [O] -> [N, O]
inline std::vector<double> dense(const std::vector<float>& x, const float* w, const float* b, int n, int in, int o) {
  std::vector<double> y(std::size_t(n) * o);
  for (int s = 0; s < n; ++s)
    for (int j = 0; j < o; ++j) {
      double acc = b ? b[j] : 0.0;
      for (int i = 0; i < in; ++i) acc += double(x[std::size_t(s) * in + i]) * w[std::size_t(j) * in + i];
      y[std::size_t(s) * o + j] = acc;
    }
  return y;
}

/// Max or average (zeros of the padding counted, as PyTorch's default) pooling.
inline std::vector<double> pool(const std::vector<float>& x, int n, int c, int h, int w, int k, int stride, int pad,
                                bool max) {
  const int oh = (h + 2 * pad - k) / stride + 1, ow = (w + 2 * pad - k) / stride + 1;
  std::vector<double> y(std::size_t(n) * c * oh * ow);
  for (int p = 0; p < n * c; ++p)
    for (int y0 = 0; y0 < oh; ++y0)
      for (int x0 = 0; x0 < ow; ++x0) {
        double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
        for (int ky = 0; ky < k; ++ky)
          for (int kx = 0; kx < k; ++kx) {
            const int yy = y0 * stride - pad + ky, xx = x0 * stride - pad + kx;
            if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
            const double v = x[(std::size_t(p) * h + yy) * w + xx];
            acc = max ? std::max(acc, v) : acc + v;
          }
        y[(std::size_t(p) * oh + y0) * ow + x0] = max ? acc : acc / (k * k);
      }
  return y;
}

inline double relu(double v) { return v > 0 ? v : 0; }
inline double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

}  // namespace sinew::test::reference
