// Can register-blocked kernels written for a 42-row batch beat oneDNN's on AlexNet's fully connected layers?
// ../2026-12-03-zen5-fc-blocked-weights found oneDNN 2.6 and 3.7 run these products at 279-307 GFLOP/s at batch 42
// against 362-478 at 128 and 256 rows. This program times, in one run on the same threads, sinew's current forms
// (forward: a matmul reading the plain [Out, In] weights through strides; backward data and weights: inner products
// on them) against three AVX-512 kernels of its own on the same plain buffers, nothing packed or reordered:
//   forward      y[m, n]  = sum_k x[m, k] W[n, k]    6 rows x 4 outputs of 16-wide partial dots along k, reduced
//                                                      at the end of each k block;
//   backward dx  dx[m, k] = sum_n dy[m, n] W[n, k]   6 rows x 64 columns of dx, n the reduction, in blocks;
//   backward dW  dW[n, k] = sum_m dy[m, n] x[m, k]   6 outputs x 64 columns of dW, the 42 rows the reduction.
// Each result is checked against oneDNN's (largest difference relative to the largest value).
// Build: g++ -O3 -march=native -fopenmp -std=c++20 kernels.cpp -o kernels -ldnnl
// Run:   OMP_NUM_THREADS=2 ./kernels
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <dnnl.hpp>
#include <vector>

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;
static engine eng(engine::kind::cpu, 0);
static stream s(eng);

template <class F>
double median_seconds(F f, int calls = 15) {
  std::vector<double> t;
  for (int i = 0; i < calls; ++i) {
    const auto a = std::chrono::steady_clock::now();
    f();
    s.wait();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// ---- forward: y = x W^T, x [M, K], W [N, K], y [M, N] ---------------------------------------------------------
template <int R>  // rows of x in the block (1..6); 4 outputs
static inline void fwd_block(const float* x, const float* w, float* y, long K, long N, long k0, long k1, bool first) {
  __m512 acc[R][4];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_ps();
  for (long k = k0; k < k1; k += 16) {
    const __m512 w0 = _mm512_loadu_ps(w + k), w1 = _mm512_loadu_ps(w + K + k), w2 = _mm512_loadu_ps(w + 2 * K + k),
                 w3 = _mm512_loadu_ps(w + 3 * K + k);
    for (int r = 0; r < R; ++r) {
      const __m512 xv = _mm512_loadu_ps(x + r * K + k);
      acc[r][0] = _mm512_fmadd_ps(xv, w0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(xv, w1, acc[r][1]);
      acc[r][2] = _mm512_fmadd_ps(xv, w2, acc[r][2]);
      acc[r][3] = _mm512_fmadd_ps(xv, w3, acc[r][3]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < 4; ++j) {
      const float v = _mm512_reduce_add_ps(acc[r][j]);
      y[r * N + j] = first ? v : y[r * N + j] + v;
    }
}

static void forward(const float* x, const float* w, float* y, long M, long K, long N, long kc) {
#pragma omp parallel for schedule(static)
  for (long n = 0; n < N; n += 4)
    for (long k0 = 0; k0 < K; k0 += kc) {
      const long k1 = std::min(K, k0 + kc);
      long m = 0;
      for (; m + 6 <= M; m += 6) fwd_block<6>(x + m * K, w + n * K, y + m * N + n, K, N, k0, k1, k0 == 0);
      switch (M - m) {
        case 5: fwd_block<5>(x + m * K, w + n * K, y + m * N + n, K, N, k0, k1, k0 == 0); break;
        case 4: fwd_block<4>(x + m * K, w + n * K, y + m * N + n, K, N, k0, k1, k0 == 0); break;
        case 3: fwd_block<3>(x + m * K, w + n * K, y + m * N + n, K, N, k0, k1, k0 == 0); break;
        case 2: fwd_block<2>(x + m * K, w + n * K, y + m * N + n, K, N, k0, k1, k0 == 0); break;
        case 1: fwd_block<1>(x + m * K, w + n * K, y + m * N + n, K, N, k0, k1, k0 == 0); break;
      }
    }
}

// ---- backward data: dx = dy W, dy [M, N], W [N, K], dx [M, K] ------------------------------------------------
template <int R>
static inline void bwd_block(const float* dy, const float* w, float* dx, long K, long N, long n0, long n1,
                             bool first) {
  __m512 acc[R][4];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < 4; ++j) acc[r][j] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(dx + r * K + 16 * j);
  for (long n = n0; n < n1; ++n) {
    const float* wn = w + n * K;
    const __m512 w0 = _mm512_loadu_ps(wn), w1 = _mm512_loadu_ps(wn + 16), w2 = _mm512_loadu_ps(wn + 32),
                 w3 = _mm512_loadu_ps(wn + 48);
    for (int r = 0; r < R; ++r) {
      const __m512 g = _mm512_set1_ps(dy[r * N + n]);
      acc[r][0] = _mm512_fmadd_ps(g, w0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(g, w1, acc[r][1]);
      acc[r][2] = _mm512_fmadd_ps(g, w2, acc[r][2]);
      acc[r][3] = _mm512_fmadd_ps(g, w3, acc[r][3]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < 4; ++j) _mm512_storeu_ps(dx + r * K + 16 * j, acc[r][j]);
}

static void backward_data(const float* dy, const float* w, float* dx, long M, long K, long N, long nc) {
#pragma omp parallel for schedule(static)
  for (long k = 0; k < K; k += 64)
    for (long n0 = 0; n0 < N; n0 += nc) {
      const long n1 = std::min(N, n0 + nc);
      long m = 0;
      for (; m + 6 <= M; m += 6) bwd_block<6>(dy + m * N, w + k, dx + m * K + k, K, N, n0, n1, n0 == 0);
      switch (M - m) {
        case 5: bwd_block<5>(dy + m * N, w + k, dx + m * K + k, K, N, n0, n1, n0 == 0); break;
        case 4: bwd_block<4>(dy + m * N, w + k, dx + m * K + k, K, N, n0, n1, n0 == 0); break;
        case 3: bwd_block<3>(dy + m * N, w + k, dx + m * K + k, K, N, n0, n1, n0 == 0); break;
        case 2: bwd_block<2>(dy + m * N, w + k, dx + m * K + k, K, N, n0, n1, n0 == 0); break;
        case 1: bwd_block<1>(dy + m * N, w + k, dx + m * K + k, K, N, n0, n1, n0 == 0); break;
      }
    }
}

// ---- backward weights: dW = dy^T x, dy [M, N], x [M, K], dW [N, K] --------------------------------------------
template <int R>  // outputs in the block (1..6)
static inline void bww_block(const float* dy, const float* x, float* dw, long M, long K, long N) {
  __m512 acc[R][4];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_ps();
  for (long m = 0; m < M; ++m) {
    const float* xm = x + m * K;
    const __m512 x0 = _mm512_loadu_ps(xm), x1 = _mm512_loadu_ps(xm + 16), x2 = _mm512_loadu_ps(xm + 32),
                 x3 = _mm512_loadu_ps(xm + 48);
    for (int r = 0; r < R; ++r) {
      const __m512 g = _mm512_set1_ps(dy[m * N + r]);
      acc[r][0] = _mm512_fmadd_ps(g, x0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(g, x1, acc[r][1]);
      acc[r][2] = _mm512_fmadd_ps(g, x2, acc[r][2]);
      acc[r][3] = _mm512_fmadd_ps(g, x3, acc[r][3]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < 4; ++j) _mm512_storeu_ps(dw + r * K + 16 * j, acc[r][j]);
}

static void backward_weights(const float* dy, const float* x, float* dw, long M, long K, long N) {
#pragma omp parallel for schedule(static)
  for (long k = 0; k < K; k += 64) {
    long n = 0;
    for (; n + 6 <= N; n += 6) bww_block<6>(dy + n, x + k, dw + n * K + k, M, K, N);
    switch (N - n) {
      case 5: bww_block<5>(dy + n, x + k, dw + n * K + k, M, K, N); break;
      case 4: bww_block<4>(dy + n, x + k, dw + n * K + k, M, K, N); break;
      case 3: bww_block<3>(dy + n, x + k, dw + n * K + k, M, K, N); break;
      case 2: bww_block<2>(dy + n, x + k, dw + n * K + k, M, K, N); break;
      case 1: bww_block<1>(dy + n, x + k, dw + n * K + k, M, K, N); break;
    }
  }
}

static double relative_difference(const float* a, const float* b, std::size_t n) {
  double diff = 0, scale = 1e-30;
  for (std::size_t i = 0; i < n; ++i) {
    diff = std::max(diff, double(std::fabs(a[i] - b[i])));
    scale = std::max(scale, double(std::fabs(b[i])));
  }
  return diff / scale;
}

int main(int argc, char** argv) {
  const long M = argc > 1 ? std::atol(argv[1]) : 42;
  const long kc = argc > 2 ? std::atol(argv[2]) : 2048, nc = argc > 3 ? std::atol(argv[3]) : 512;
  const long layers[3][2] = {{9216, 4096}, {4096, 4096}, {4096, 1000}};
  std::printf("batch %ld, %d threads, forward k block %ld, backward data n block %ld\n", M, omp_get_max_threads(), kc,
              nc);
  double ours_total = 0, theirs_total = 0, flops_total = 0;
  for (auto& l : layers) {
    const long K = l[0], N = l[1];
    memory::desc x_md({M, K}, dt::f32, tag::ab), y_md({M, N}, dt::f32, tag::ab);
    memory::desc w_mm({K, N}, dt::f32, tag::ba), w_ip({N, K}, dt::f32, tag::ab), b_md({N}, dt::f32, tag::a);
    memory x(x_md, eng), y(y_md, eng), dy(y_md, eng), dx(x_md, eng), w(w_ip, eng), dw(w_ip, eng), bias(b_md, eng),
        db(b_md, eng);
    auto* px = static_cast<float*>(x.get_data_handle());
    auto* pdy = static_cast<float*>(dy.get_data_handle());
    auto* pw = static_cast<float*>(w.get_data_handle());
    for (long i = 0; i < M * K; ++i) px[i] = float((i * 7) % 23) * 0.01f - 0.1f;
    for (long i = 0; i < M * N; ++i) pdy[i] = float((i * 5) % 19) * 0.01f - 0.09f;
    for (long i = 0; i < N * K; ++i) pw[i] = float((i * 3) % 29) * 0.001f - 0.014f;
    std::fill_n(static_cast<float*>(bias.get_data_handle()), N, 0.0f);
    memory w_as_mm(w_mm, eng, w.get_data_handle());
#if DNNL_VERSION_MAJOR >= 3
    matmul::primitive_desc fpd(eng, x_md, w_mm, y_md);
    inner_product_forward::primitive_desc hint(eng, prop_kind::forward_training, x_md, w_ip, b_md, y_md);
    inner_product_backward_data::primitive_desc dpd(eng, x_md, w_ip, y_md, hint);
    inner_product_backward_weights::primitive_desc wpd(eng, x_md, w_ip, b_md, y_md, hint);
#else
    matmul::primitive_desc fpd(matmul::desc(x_md, w_mm, y_md), eng);
    inner_product_forward::primitive_desc hint(
        inner_product_forward::desc(prop_kind::forward_training, x_md, w_ip, b_md, y_md), eng);
    inner_product_backward_data::primitive_desc dpd(inner_product_backward_data::desc(x_md, w_ip, y_md), eng, hint);
    inner_product_backward_weights::primitive_desc wpd(
        inner_product_backward_weights::desc(x_md, w_ip, b_md, y_md), eng, hint);
#endif
    matmul fwd(fpd);
    inner_product_backward_data bwd(dpd);
    inner_product_backward_weights bww(wpd);
    std::vector<float> y2(M * N), dx2(M * K), dw2(N * K);
    const double flops = 2.0 * M * K * N;
    double t[2][3];
    for (int round = 0; round < 2; ++round) {  // interleaved: oneDNN, ours, oneDNN, ours
      t[0][0] = median_seconds([&] { fwd.execute(s, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w_as_mm}, {DNNL_ARG_DST, y}}); });
      t[1][0] = median_seconds([&] { forward(px, pw, y2.data(), M, K, N, kc); });
      t[0][1] = median_seconds([&] { bwd.execute(s, {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DIFF_SRC, dx}}); });
      t[1][1] = median_seconds([&] { backward_data(pdy, pw, dx2.data(), M, K, N, nc); });
      t[0][2] = median_seconds([&] {
        bww.execute(s, {{DNNL_ARG_SRC, x}, {DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DIFF_WEIGHTS, dw}, {DNNL_ARG_DIFF_BIAS, db}});
      });
      t[1][2] = median_seconds([&] { backward_weights(pdy, px, dw2.data(), M, K, N); });
    }
    const char* names[3] = {"forward", "backward data", "backward weights"};
    const double diffs[3] = {relative_difference(y2.data(), static_cast<float*>(y.get_data_handle()), M * N),
                             relative_difference(dx2.data(), static_cast<float*>(dx.get_data_handle()), M * K),
                             relative_difference(dw2.data(), static_cast<float*>(dw.get_data_handle()), N * K)};
    for (int p = 0; p < 3; ++p) {
      std::printf("%5ld->%-5ld %-17s oneDNN %7.2f ms %6.1f GFLOP/s | ours %7.2f ms %6.1f GFLOP/s | ours/oneDNN time "
                  "%.2f | max diff %.1e\n",
                  K, N, names[p], t[0][p] * 1e3, flops / t[0][p] / 1e9, t[1][p] * 1e3, flops / t[1][p] / 1e9,
                  t[1][p] / t[0][p], diffs[p]);
      ours_total += t[1][p];
      theirs_total += t[0][p];
      flops_total += flops;
    }
  }
  std::printf("all three layers' passes: oneDNN %.2f ms (%.1f GFLOP/s), ours %.2f ms (%.1f GFLOP/s), ours/oneDNN %.2f\n",
              theirs_total * 1e3, flops_total / theirs_total / 1e9, ours_total * 1e3, flops_total / ours_total / 1e9,
              ours_total / theirs_total);
}
