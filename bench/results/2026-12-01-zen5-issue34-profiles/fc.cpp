// The fully connected layers of AlexNet at batch 42 on oneDNN's matmul, in the forms that read the weights where they
// lie (row-major, what sinew runs) and in oneDNN's blocked layout (reordered once, not timed; the reorder timed apart);
// the backward data also from 4 floats past the weights' start (weighted_layer.hpp: inner_product_split_backward_data), and the
// forward with the weights as the A operand (y^T = W x^T, then y^T transposed into y).
// Build: g++ -O2 -std=c++20 fc.cpp -o fc -ldnnl; run: OMP_NUM_THREADS=2 OMP_PROC_BIND=close OMP_PLACES=cores ./fc
#include <dnnl.hpp>
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cstdlib>
using namespace dnnl;
using tag = memory::format_tag; using dt = memory::data_type;
static engine eng(engine::kind::cpu, 0); static stream s(eng);
template <class F> double med(F f) { std::vector<double> t; for (int i = 0; i < 15; ++i) { auto a = std::chrono::steady_clock::now(); f(); s.wait(); t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count()); } std::sort(t.begin(), t.end()); return t[t.size()/2]; }
static matmul::primitive_desc mk(const memory::desc& a, const memory::desc& b, const memory::desc& c) {
#if DNNL_VERSION_MAJOR >= 3
  return matmul::primitive_desc(eng, a, b, c);
#else
  return matmul::primitive_desc(matmul::desc(a, b, c), eng);
#endif
}
static void fill(memory& m) { auto* p = (float*)m.get_data_handle(); size_t n = m.get_desc().get_size()/4; for (size_t i = 0; i < n; ++i) p[i] = (i % 17) * 0.01f; }
int main(int argc, char** argv) {
  const memory::dim M = 42; int shapes[][2] = {{9216, 4096}, {4096, 4096}, {4096, 1000}};
  for (auto& sh : shapes) {
    memory::dim K = sh[0], N = sh[1];
    double fl = 2.0 * M * K * N;
    memory W({{N, K}, dt::f32, tag::ab}, eng); fill(W);
    memory x({{M, K}, dt::f32, tag::ab}, eng); fill(x);
    memory y({{M, N}, dt::f32, tag::ab}, eng);
    memory dy({{M, N}, dt::f32, tag::ab}, eng); fill(dy);
    memory dx({{M, K}, dt::f32, tag::ab}, eng);
    // fwd as now: W read as [K,N] ba
    {
      memory::desc w2({K, N}, dt::f32, tag::ba);
      auto pd = mk(x.get_desc(), w2, y.get_desc());
      matmul mm(pd); memory wv(w2, eng, W.get_data_handle());
      double t = med([&] { mm.execute(s, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, wv}, {DNNL_ARG_DST, y}}); });
      printf("K=%ld N=%ld fwd strided   %-22s %7.2f ms %6.1f GF/s\n", K, N, pd.impl_info_str(), t*1e3, fl/t/1e9);
      memory::desc wany({K, N}, dt::f32, tag::any);
      auto pd2 = mk(x.get_desc(), wany, y.get_desc());
      matmul mm2(pd2); memory wb(pd2.weights_desc(), eng);
      reorder(wv, wb).execute(s, wv, wb); s.wait();
      double t2 = med([&] { mm2.execute(s, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, wb}, {DNNL_ARG_DST, y}}); });
      printf("K=%ld N=%ld fwd blocked   %-22s %7.2f ms %6.1f GF/s\n", K, N, pd2.impl_info_str(), t2*1e3, fl/t2/1e9);
      double tr = med([&] { reorder(wv, wb).execute(s, wv, wb); });
      printf("   reorder W to blocked %7.2f ms\n", tr*1e3);
      {
        memory::desc xh({M, 4}, dt::f32, memory::dims{K, 1}), wh({4, N}, dt::f32, memory::dims{1, K});
        memory::desc xr({M, K - 4}, dt::f32, memory::dims{K, 1}), wr({K - 4, N}, dt::f32, memory::dims{1, K});
        auto ph = mk(xh, wh, y.get_desc());
        post_ops po; po.append_sum(1.f); primitive_attr at; at.set_post_ops(po);
#if DNNL_VERSION_MAJOR >= 3
        auto pr = matmul::primitive_desc(eng, xr, wr, y.get_desc(), at);
#else
        auto pr = matmul::primitive_desc(matmul::desc(xr, wr, y.get_desc()), at, eng);
#endif
        matmul mh(ph), mr(pr);
        float* xp = (float*)x.get_data_handle(); float* wp = (float*)W.get_data_handle();
        memory xhm(xh, eng, xp), whm(wh, eng, wp), xrm(xr, eng, xp + 4), wrm(wr, eng, wp + 4);
        double t5 = med([&] { mh.execute(s, {{DNNL_ARG_SRC, xhm}, {DNNL_ARG_WEIGHTS, whm}, {DNNL_ARG_DST, y}});
                              mr.execute(s, {{DNNL_ARG_SRC, xrm}, {DNNL_ARG_WEIGHTS, wrm}, {DNNL_ARG_DST, y}}); });
        printf("K=%ld N=%ld fwd offset4   %-22s %7.2f ms %6.1f GF/s\n", K, N, pr.impl_info_str(), t5*1e3, fl/t5/1e9);
      }
      {
        // weights as the A operand: y^T [N, M] = W [N, K] x^T [K, M], then y^T transposed into y
        memory::desc xt2({K, M}, dt::f32, tag::ba), yt2({N, M}, dt::f32, tag::ab);
        auto p6 = mk(W.get_desc(), xt2, yt2);
        matmul m6(p6); memory xv(xt2, eng, x.get_data_handle()), ytm(yt2, eng);
        memory ytv(memory::desc({N, M}, dt::f32, tag::ab), eng, ytm.get_data_handle());
        memory yview(memory::desc({N, M}, dt::f32, tag::ba), eng, y.get_data_handle());
        reorder tr(ytv, yview);
        double t6 = med([&] { m6.execute(s, {{DNNL_ARG_SRC, W}, {DNNL_ARG_WEIGHTS, xv}, {DNNL_ARG_DST, ytm}}); });
        double t7 = med([&] { tr.execute(s, ytv, yview); });
        printf("K=%ld N=%ld fwd W as A    %-22s %7.2f ms %6.1f GF/s (+ transpose %.3f ms)\n", K, N, p6.impl_info_str(), t6*1e3, fl/t6/1e9, t7*1e3);
      }
      // transposed formulation: y^T [N,M] = W [N,K] x^T [K,M]
      memory::desc xt({K, M}, dt::f32, tag::ba), yt({N, M}, dt::f32, tag::ba);
      if (getenv("WXT")) try {
        auto pd3 = mk(W.get_desc(), xt, yt);
        matmul mm3(pd3); memory xv(xt, eng, x.get_data_handle()), yv(yt, eng, y.get_data_handle());
        double t3 = med([&] { mm3.execute(s, {{DNNL_ARG_SRC, W}, {DNNL_ARG_WEIGHTS, xv}, {DNNL_ARG_DST, yv}}); });
        printf("K=%ld N=%ld fwd W*xT      %-22s %7.2f ms %6.1f GF/s\n", K, N, pd3.impl_info_str(), t3*1e3, fl/t3/1e9);
      } catch (std::exception& e) { printf("W*xT: %s\n", e.what()); }
    }
    // bwd data: dx[M,K] = dy[M,N] W[N,K]
    {
      auto pd = mk(dy.get_desc(), W.get_desc(), dx.get_desc());
      matmul mm(pd);
      double t = med([&] { mm.execute(s, {{DNNL_ARG_SRC, dy}, {DNNL_ARG_WEIGHTS, W}, {DNNL_ARG_DST, dx}}); });
      printf("K=%ld N=%ld bwd plain     %-22s %7.2f ms %6.1f GF/s\n", K, N, pd.impl_info_str(), t*1e3, fl/t/1e9);
      memory::desc wany({N, K}, dt::f32, tag::any);
      auto pd2 = mk(dy.get_desc(), wany, dx.get_desc());
      matmul mm2(pd2); memory wb(pd2.weights_desc(), eng);
      reorder(W, wb).execute(s, W, wb); s.wait();
      double t2 = med([&] { mm2.execute(s, {{DNNL_ARG_SRC, dy}, {DNNL_ARG_WEIGHTS, wb}, {DNNL_ARG_DST, dx}}); });
      printf("K=%ld N=%ld bwd blocked   %-22s %7.2f ms %6.1f GF/s\n", K, N, pd2.impl_info_str(), t2*1e3, fl/t2/1e9);
      // offset by 4 floats trick
      memory::desc wp({N, K-4}, dt::f32, memory::dims{K, 1}), dxp({M, K-4}, dt::f32, memory::dims{K, 1});
      auto pd4 = mk(dy.get_desc(), wp, dxp);
      matmul mm4(pd4); memory wv(wp, eng, (float*)W.get_data_handle()+4), dxv(dxp, eng, (float*)dx.get_data_handle()+4);
      double t4 = med([&] { mm4.execute(s, {{DNNL_ARG_SRC, dy}, {DNNL_ARG_WEIGHTS, wv}, {DNNL_ARG_DST, dxv}}); });
      printf("K=%ld N=%ld bwd offset4   %-22s %7.2f ms %6.1f GF/s\n", K, N, pd4.impl_info_str(), t4*1e3, fl/t4/1e9);
    }
    // bww: dW[N,K] = dy^T x
    {
      memory::desc dyt({N, M}, dt::f32, tag::ba);
      auto pd = mk(dyt, x.get_desc(), W.get_desc());
      matmul mm(pd); memory dyv(dyt, eng, dy.get_data_handle()); memory dW(W.get_desc(), eng);
      double t = med([&] { mm.execute(s, {{DNNL_ARG_SRC, dyv}, {DNNL_ARG_WEIGHTS, x}, {DNNL_ARG_DST, dW}}); });
      printf("K=%ld N=%ld bww           %-22s %7.2f ms %6.1f GF/s\n", K, N, pd.impl_info_str(), t*1e3, fl/t/1e9);
    }
  }
}
