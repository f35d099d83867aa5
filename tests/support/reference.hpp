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

/// Batch normalisation of x [N, C, H, W] with per-channel mean and (biased) variance; gamma and beta [C].
inline std::vector<double> batch_norm(const std::vector<float>& x, const std::vector<double>& mean,
                                      const std::vector<double>& variance, const float* gamma, const float* beta,
                                      int n, int c, int hw, double eps = 1e-5) {
  std::vector<double> y(x.size());
  for (int s = 0; s < n; ++s)
    for (int ch = 0; ch < c; ++ch)
      for (int i = 0; i < hw; ++i) {
        const std::size_t k = (std::size_t(s) * c + ch) * hw + i;
        y[k] = (x[k] - mean[ch]) / std::sqrt(variance[ch] + eps) * gamma[ch] + beta[ch];
      }
  return y;
}

/// Per-channel mean and variance of x [N, C, H, W] over N, H and W; unbiased divides by n - 1.
inline void channel_statistics(const std::vector<float>& x, int n, int c, int hw, std::vector<double>& mean,
                               std::vector<double>& variance, bool unbiased) {
  mean.assign(std::size_t(c), 0.0);
  variance.assign(std::size_t(c), 0.0);
  const double count = double(n) * hw;
  for (int ch = 0; ch < c; ++ch) {
    for (int s = 0; s < n; ++s)
      for (int i = 0; i < hw; ++i) mean[ch] += x[(std::size_t(s) * c + ch) * hw + i];
    mean[ch] /= count;
    for (int s = 0; s < n; ++s)
      for (int i = 0; i < hw; ++i) {
        const double d = x[(std::size_t(s) * c + ch) * hw + i] - mean[ch];
        variance[ch] += d * d;
      }
    variance[ch] /= unbiased ? count - 1 : count;
  }
}

/// torch.nn.functional.adaptive_avg_pool2d: bin i covers [floor(i H / OH), ceil((i + 1) H / OH)).
inline std::vector<double> adaptive_avg_pool(const std::vector<float>& x, int n, int c, int h, int w, int oh,
                                             int ow) {
  std::vector<double> y(std::size_t(n) * c * oh * ow);
  for (int p = 0; p < n * c; ++p)
    for (int i = 0; i < oh; ++i)
      for (int j = 0; j < ow; ++j) {
        const int r0 = int(std::floor(double(i) * h / oh)), r1 = int(std::ceil(double(i + 1) * h / oh));
        const int c0 = int(std::floor(double(j) * w / ow)), c1 = int(std::ceil(double(j + 1) * w / ow));
        double sum = 0;
        for (int r = r0; r < r1; ++r)
          for (int s = c0; s < c1; ++s) sum += x[(std::size_t(p) * h + r) * w + s];
        y[(std::size_t(p) * oh + i) * ow + j] = sum / ((r1 - r0) * (c1 - c0));
      }
  return y;
}

inline double relu(double v) { return v > 0 ? v : 0; }
inline double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

}  // namespace sinew::test::reference
