// Build: g++ -std=c++20 -O3 -march=native mm.cpp -ldnnl -o mm; run: OMP_NUM_THREADS=1 ./mm M K N (prints three rounds).
// oneDNN matmul y[M,N] = x[M,K] W^T (W [N,K] row-major) against a register-blocked dot kernel, single thread.
#include <dnnl.hpp>
#include <xsimd/xsimd.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cmath>
using namespace dnnl;
using B = xsimd::batch<float>;
template <int M>
void mine(const float* x, const float* w, float* y, int K, int N) {
  constexpr int S = B::size;
  for (int n = 0; n + 4 <= N; n += 4) {
    B acc[4][M];
    for (int j = 0; j < 4; ++j) for (int m = 0; m < M; ++m) acc[j][m] = B(0.f);
    for (int k = 0; k < K; k += S) {
      B xv[M];
      for (int m = 0; m < M; ++m) xv[m] = B::load_aligned(x + m * K + k);
      for (int j = 0; j < 4; ++j) {
        const B wv = B::load_aligned(w + std::size_t(n + j) * K + k);
        for (int m = 0; m < M; ++m) acc[j][m] = xsimd::fma(wv, xv[m], acc[j][m]);
      }
    }
    for (int j = 0; j < 4; ++j) for (int m = 0; m < M; ++m) y[m * N + n + j] = xsimd::hadd(acc[j][m]);
  }
}
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main(int argc, char** argv) {
  const int M = atoi(argv[1]), K = atoi(argv[2]), N = atoi(argv[3]);
  // many weight matrices so that each pass reads from memory, as a net's layers do
  const int copies = std::max(1, int(256e6 / (4.0 * K * N)));
  engine eng(engine::kind::cpu, 0); stream s(eng);
  std::vector<float*> ws(copies);
  for (auto& w : ws) { w = (float*)aligned_alloc(64, sizeof(float) * K * N); for (long i = 0; i < long(K) * N; ++i) w[i] = float(i % 7) * 0.01f; }
  float* x = (float*)aligned_alloc(64, sizeof(float) * M * K); for (int i = 0; i < M * K; ++i) x[i] = float(i % 5) * 0.1f;
  float* y = (float*)aligned_alloc(64, sizeof(float) * M * N); float* y2 = (float*)aligned_alloc(64, sizeof(float) * M * N);
  memory::desc xd({M, K}, memory::data_type::f32, memory::format_tag::ab), wd({K, N}, memory::data_type::f32, memory::format_tag::ba), yd({M, N}, memory::data_type::f32, memory::format_tag::ab);
  matmul mm(matmul::primitive_desc(matmul::desc(xd, wd, yd), eng));
  memory xm(xd, eng, x), ym(yd, eng, y);
  std::vector<memory> wm; for (auto w : ws) wm.emplace_back(wd, eng, w);
  auto run = [&](int which) {
    double t0 = now();
    for (int r = 0; r < 3; ++r) for (int c = 0; c < copies; ++c) {
      if (which == 0) mm.execute(s, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, wm[c]}, {DNNL_ARG_DST, ym}});
      else switch (M) { case 1: mine<1>(x, ws[c], y2, K, N); break; case 2: mine<2>(x, ws[c], y2, K, N); break; case 4: mine<4>(x, ws[c], y2, K, N); break; case 8: mine<8>(x, ws[c], y2, K, N); break; }
    }
    return (now() - t0) / (3.0 * copies);
  };
  for (int round = 0; round < 3; ++round) {
    double a = run(0), b = run(1);
    double diff = 0; for (int i = 0; i < M * N; ++i) diff = std::max(diff, double(std::fabs(y[i] - y2[i]) / (1e-3 + std::fabs(y[i]))));
    std::printf("M=%d K=%d N=%d: onednn %.1f us (%.1f GB/s), own %.1f us (%.1f GB/s), own/onednn %.2f, rel diff %.1e\n", M, K, N, a * 1e6, 4.0 * K * N / a / 1e9, b * 1e6, 4.0 * K * N / b / 1e9, b / a, diff);
  }
}
