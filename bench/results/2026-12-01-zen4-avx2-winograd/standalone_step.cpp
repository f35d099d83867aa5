// bench/results/2026-12-01-zen4-avx2-winograd/standalone_step.cpp: the README's scratch program, not library code,
// built by hand (g++ -O3 -march=native -fopenmp -std=c++20 standalone_step.cpp -ldnnl; oneDNN 3) and run as
// `./a.out BATCH IN SIZE OUT`. One training step of a 3x3, stride-1, pad-1 convolution as Winograd F(2x2,3x3):
// forward, backward data and backward weights, its 16 products on oneDNN's batched matmul, its transforms plain
// loops over channels (NHWC), against oneDNN's direct primitives in the layouts of their choice; it prints both
// times and Winograd's largest error relative to the direct results.
#include <dnnl.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <unordered_map>
#include <string>
#include <vector>
using namespace dnnl;
using tag = memory::format_tag; using dt = memory::data_type; using args_t = std::unordered_map<int, memory>;
static engine eng(engine::kind::cpu, 0); static stream s(eng);
template <class F> double timeit(F f) { for (int i = 0; i < 3; ++i) f(); s.wait(); double best = 1e9;
  for (int r = 0; r < 7; ++r) { auto t0 = std::chrono::steady_clock::now(); for (int i = 0; i < 10; ++i) f(); s.wait();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 10); }
  return best; }
memory fill(const memory::desc& d, float v) { memory m(d, eng); std::fill_n((float*)m.get_data_handle(), d.get_size() / 4, v); return m; }
struct Shape { int N, C, H, K, T, TH; };
// B^T d B over one 4x4 tile of an NHWC image (channels [0, C)), into V[16][T][C] at tile t.
void in_tile(const float* x, const Shape& s, int C, int t, float* V) {
  const int H = s.H, n = t / (s.TH * s.TH), ty = (t / s.TH) % s.TH, tx = t % s.TH, T = s.T;
  for (int cb = 0; cb < C; cb += 64) { const int cw = std::min(64, C - cb); float d[4][4][64], r[4][4][64];
    for (int i = 0; i < 4; ++i) for (int j = 0; j < 4; ++j) { const int yy = ty * 2 - 1 + i, xx = tx * 2 - 1 + j;
      if (yy < 0 || yy >= H || xx < 0 || xx >= H) std::fill_n(d[i][j], cw, 0.f);
      else std::copy_n(&x[((size_t(n) * H + yy) * H + xx) * C + cb], cw, d[i][j]); }
    for (int j = 0; j < 4; ++j) for (int c = 0; c < cw; ++c) { r[0][j][c] = d[0][j][c] - d[2][j][c]; r[1][j][c] = d[1][j][c] + d[2][j][c];
      r[2][j][c] = d[2][j][c] - d[1][j][c]; r[3][j][c] = d[1][j][c] - d[3][j][c]; }
    for (int i = 0; i < 4; ++i) { float* o[4]; for (int j = 0; j < 4; ++j) o[j] = &V[(size_t(i * 4 + j) * T + t) * C + cb];
      for (int c = 0; c < cw; ++c) { o[0][c] = r[i][0][c] - r[i][2][c]; o[1][c] = r[i][1][c] + r[i][2][c];
        o[2][c] = r[i][2][c] - r[i][1][c]; o[3][c] = r[i][1][c] - r[i][3][c]; } } } }
// A^T m A: M[16][T][K] at tile t into the 2x2 outputs of an NHWC image.
void out_tile(const float* M, const Shape& s, int K, int t, float* y) {
  const int H = s.H, n = t / (s.TH * s.TH), ty = (t / s.TH) % s.TH, tx = t % s.TH, T = s.T;
  for (int kb = 0; kb < K; kb += 64) { const int kw = std::min(64, K - kb); float r[2][4][64];
    for (int j = 0; j < 4; ++j) { const float* m[4]; for (int i = 0; i < 4; ++i) m[i] = &M[(size_t(i * 4 + j) * T + t) * K + kb];
      for (int c = 0; c < kw; ++c) { r[0][j][c] = m[0][c] + m[1][c] + m[2][c]; r[1][j][c] = m[1][c] - m[2][c] - m[3][c]; } }
    for (int i = 0; i < 2; ++i) { float* o0 = &y[((size_t(n) * H + ty * 2 + i) * H + tx * 2) * K + kb]; float* o1 = o0 + K;
      for (int c = 0; c < kw; ++c) { o0[c] = r[i][0][c] + r[i][1][c] + r[i][2][c]; o1[c] = r[i][1][c] - r[i][2][c] - r[i][3][c]; } } } }
// A dy A^T: the 2x2 output gradients of tile t (NHWC) into dM[16][T][K].
void dy_tile(const float* dy, const Shape& s, int t, float* dM) {
  const int H = s.H, K = s.K, n = t / (s.TH * s.TH), ty = (t / s.TH) % s.TH, tx = t % s.TH, T = s.T;
  for (int kb = 0; kb < K; kb += 64) { const int kw = std::min(64, K - kb); float r[4][2][64];
    const float* g[2][2]; for (int i = 0; i < 2; ++i) for (int j = 0; j < 2; ++j) g[i][j] = &dy[((size_t(n) * H + ty * 2 + i) * H + tx * 2 + j) * K + kb];
    for (int j = 0; j < 2; ++j) for (int c = 0; c < kw; ++c) { r[0][j][c] = g[0][j][c]; r[1][j][c] = g[0][j][c] + g[1][j][c];
      r[2][j][c] = g[0][j][c] - g[1][j][c]; r[3][j][c] = -g[1][j][c]; }
    for (int i = 0; i < 4; ++i) { float* o[4]; for (int j = 0; j < 4; ++j) o[j] = &dM[(size_t(i * 4 + j) * T + t) * K + kb];
      for (int c = 0; c < kw; ++c) { o[0][c] = r[i][0][c]; o[1][c] = r[i][0][c] + r[i][1][c]; o[2][c] = r[i][0][c] - r[i][1][c]; o[3][c] = -r[i][1][c]; } } } }
// G g G^T for every (k, c): into U[16][C][K] (flip = false), or for backward data the kernel turned 180 degrees
// with in and out swapped, into U[16][K][C] (flip = true).
void w_trans(const std::vector<float>& w, int C, int K, bool flip, std::vector<float>& U) {
  #pragma omp parallel for
  for (int c = 0; c < C; ++c) for (int k = 0; k < K; ++k) { float g[3][3], t[4][3], u[4][4];
    for (int r = 0; r < 9; ++r) g[r / 3][r % 3] = w[(size_t(k) * C + c) * 9 + (flip ? 8 - r : r)];
    for (int j = 0; j < 3; ++j) { t[0][j] = g[0][j]; t[1][j] = .5f * (g[0][j] + g[1][j] + g[2][j]); t[2][j] = .5f * (g[0][j] - g[1][j] + g[2][j]); t[3][j] = g[2][j]; }
    for (int i = 0; i < 4; ++i) { u[i][0] = t[i][0]; u[i][1] = .5f * (t[i][0] + t[i][1] + t[i][2]); u[i][2] = .5f * (t[i][0] - t[i][1] + t[i][2]); u[i][3] = t[i][2]; }
    for (int x = 0; x < 16; ++x) U[flip ? (size_t(x) * K + k) * C + c : (size_t(x) * C + c) * K + k] = u[x / 4][x % 4]; } }
// G^T dU G: dU[16][C][K] into dW [K][C][3][3].
void w_grad(const std::vector<float>& dU, int C, int K, std::vector<float>& dw) {
  #pragma omp parallel for
  for (int c = 0; c < C; ++c) for (int k = 0; k < K; ++k) { float u[4][4], t[3][4];
    for (int x = 0; x < 16; ++x) u[x / 4][x % 4] = dU[(size_t(x) * C + c) * K + k];
    for (int j = 0; j < 4; ++j) { t[0][j] = u[0][j] + .5f * (u[1][j] + u[2][j]); t[1][j] = .5f * (u[1][j] - u[2][j]); t[2][j] = .5f * (u[1][j] + u[2][j]) + u[3][j]; }
    float* o = &dw[(size_t(k) * C + c) * 9];
    for (int i = 0; i < 3; ++i) { o[i * 3 + 0] = t[i][0] + .5f * (t[i][1] + t[i][2]); o[i * 3 + 1] = .5f * (t[i][1] - t[i][2]); o[i * 3 + 2] = .5f * (t[i][1] + t[i][2]) + t[i][3]; } } }
double maxrel(const std::vector<float>& a, const float* b) { double e = 0, m = 0;
  for (size_t i = 0; i < a.size(); ++i) e = std::max(e, (double)std::fabs(a[i] - b[i])), m = std::max(m, (double)std::fabs(b[i])); return e / m; }
int main(int argc, char** argv) {
  const int N = atoi(argv[1]), C = atoi(argv[2]), H = atoi(argv[3]), K = atoi(argv[4]);
  const Shape sh{N, C, H, K, N * (H / 2) * (H / 2), H / 2}; const int T = sh.T;
  std::mt19937 g(1); std::normal_distribution<float> nd;
  std::vector<float> x(size_t(N) * H * H * C), w(size_t(K) * C * 9), dy(size_t(N) * H * H * K);
  for (auto& v : x) v = nd(g); for (auto& v : w) v = nd(g) * 0.1f; for (auto& v : dy) v = nd(g);
  const memory::dims xd{N, C, H, H}, wd{K, C, 3, 3}, yd{N, K, H, H}, st{1, 1}, pd{1, 1};
  // Reference results: oneDNN direct in NHWC with plain weights.
  memory::desc xn(xd, dt::f32, tag::acdb), wo(wd, dt::f32, tag::oihw), yn(yd, dt::f32, tag::acdb);
  convolution_forward::primitive_desc rf(eng, prop_kind::forward_training, algorithm::convolution_direct, xn, wo, yn, st, pd, pd);
  convolution_backward_data::primitive_desc rb(eng, algorithm::convolution_direct, xn, wo, yn, st, pd, pd, rf);
  convolution_backward_weights::primitive_desc rw(eng, algorithm::convolution_direct, xn, wo, yn, st, pd, pd, rf);
  std::vector<float> yref(dy.size()), dxref(x.size()), dwref(w.size());
  memory xm(xn, eng, x.data()), wm(wo, eng, w.data()), dym(yn, eng, dy.data());
  convolution_forward(rf).execute(s, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, memory(yn, eng, yref.data())}});
  convolution_backward_data(rb).execute(s, {{DNNL_ARG_DIFF_DST, dym}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DIFF_SRC, memory(xn, eng, dxref.data())}});
  convolution_backward_weights(rw).execute(s, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DIFF_DST, dym}, {DNNL_ARG_DIFF_WEIGHTS, memory(wo, eng, dwref.data())}});
  s.wait();
  // Timed reference: layouts of oneDNN's choice (what conv2d_op runs).
  memory::desc xa(xd, dt::f32, tag::any), wa(wd, dt::f32, tag::any), ya(yd, dt::f32, tag::any);
  convolution_forward::primitive_desc af(eng, prop_kind::forward_training, algorithm::convolution_direct, xa, wa, ya, st, pd, pd);
  convolution_backward_data::primitive_desc ab(eng, algorithm::convolution_direct, xa, wa, ya, st, pd, pd, af);
  convolution_backward_weights::primitive_desc aw(eng, algorithm::convolution_direct, xa, wa, ya, st, pd, pd, af);
  convolution_forward pf(af); convolution_backward_data pb(ab); convolution_backward_weights pw(aw);
  args_t fa{{DNNL_ARG_SRC, fill(af.src_desc(), .1f)}, {DNNL_ARG_WEIGHTS, fill(af.weights_desc(), .1f)}, {DNNL_ARG_DST, fill(af.dst_desc(), 0)}};
  args_t ba{{DNNL_ARG_DIFF_DST, fill(ab.diff_dst_desc(), .1f)}, {DNNL_ARG_WEIGHTS, fill(ab.weights_desc(), .1f)}, {DNNL_ARG_DIFF_SRC, fill(ab.diff_src_desc(), 0)}};
  args_t wa2{{DNNL_ARG_SRC, fill(aw.src_desc(), .1f)}, {DNNL_ARG_DIFF_DST, fill(aw.diff_dst_desc(), .1f)}, {DNNL_ARG_DIFF_WEIGHTS, fill(aw.diff_weights_desc(), 0)}};
  const double df = timeit([&] { pf.execute(s, fa); }), db = timeit([&] { pb.execute(s, ba); }), dw_ = timeit([&] { pw.execute(s, wa2); });
  // Winograd.
  std::vector<float> V(16 * size_t(T) * C), Vd(16 * size_t(T) * K), U(16 * size_t(C) * K), Ub(U.size()), M(16 * size_t(T) * K),
      Md(16 * size_t(T) * C), dM(16 * size_t(T) * K), dU(U.size()), y(dy.size()), dx(x.size()), dw(w.size());
  std::string mm_impl;
  auto mm = [&](memory::dims a, memory::dims as, memory::dims b, memory::dims c, float* A, float* B, float* Cp) {
    memory::desc ad(a, dt::f32, as), bd(b, dt::f32, tag::abc), cd(c, dt::f32, tag::abc);
    matmul::primitive_desc p(eng, ad, bd, cd); mm_impl = p.impl_info_str();
    return std::pair{matmul(p), args_t{{DNNL_ARG_SRC, memory(ad, eng, A)}, {DNNL_ARG_WEIGHTS, memory(bd, eng, B)}, {DNNL_ARG_DST, memory(cd, eng, Cp)}}}; };
  auto [mf, mfa] = mm({16, T, C}, {T * C, C, 1}, {16, C, K}, {16, T, K}, V.data(), U.data(), M.data());
  auto [mb, mba] = mm({16, T, K}, {T * K, K, 1}, {16, K, C}, {16, T, C}, Vd.data(), Ub.data(), Md.data());
  auto [mw, mwa] = mm({16, C, T}, {T * C, 1, C}, {16, T, K}, {16, C, K}, V.data(), dM.data(), dU.data());
  auto tiles = [&](auto f) {
    #pragma omp parallel for
    for (int t = 0; t < T; ++t) f(t); };
  auto fwd = [&] { w_trans(w, C, K, false, U); tiles([&](int t) { in_tile(x.data(), sh, C, t, V.data()); }); mf.execute(s, mfa); s.wait();
    tiles([&](int t) { out_tile(M.data(), sh, K, t, y.data()); }); };
  auto bwd_d = [&] { w_trans(w, C, K, true, Ub); tiles([&](int t) { in_tile(dy.data(), sh, K, t, Vd.data()); }); mb.execute(s, mba); s.wait();
    tiles([&](int t) { out_tile(Md.data(), sh, C, t, dx.data()); }); };
  auto bwd_w = [&] { tiles([&](int t) { dy_tile(dy.data(), sh, t, dM.data()); }); mw.execute(s, mwa); s.wait(); w_grad(dU, C, K, dw); };
  fwd(); bwd_d(); bwd_w();
  const double ef = maxrel(y, yref.data()), eb = maxrel(dx, dxref.data()), ew = maxrel(dw, dwref.data());
  const double wf = timeit(fwd), wb = timeit(bwd_d), ww = timeit(bwd_w);
  std::printf("%4d->%-4d %2dx%-2d direct %-22s fwd %6.3f bwd_d %6.3f bwd_w %6.3f = %6.3f ms | winograd %-22s fwd %6.3f bwd_d %6.3f bwd_w %6.3f = %6.3f ms | x%.2f | max rel err %.1e %.1e %.1e\n",
              C, K, H, H, af.impl_info_str(), df, db, dw_, df + db + dw_, mm_impl.c_str(), wf, wb, ww, wf + wb + ww,
              (df + db + dw_) / (wf + wb + ww), ef, eb, ew);
}
