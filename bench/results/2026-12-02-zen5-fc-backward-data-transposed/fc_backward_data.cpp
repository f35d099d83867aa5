// AlexNet's fully connected layers' backward data at batch 42 on oneDNN's matmul, two ways: dx = dy W with the
// weights where they lie (what sinew runs), and dx^T = W^T dy^T with the weights as the A operand, then dx^T
// transposed into dx (timed apart). Each shape twice, the median of 15 runs each.
// Build: g++ -O2 -std=c++20 fc_backward_data.cpp -o fc_backward_data -ldnnl
// Run: OMP_NUM_THREADS=2 OMP_PROC_BIND=close OMP_PLACES=cores ./fc_backward_data
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
int main() {
  const memory::dim M = 42; int shapes[][2] = {{9216, 4096}, {4096, 4096}, {4096, 1000}};
  for (auto& sh : shapes) {
    memory::dim K = sh[0], N = sh[1];
    double fl = 2.0 * M * K * N;
    memory W({{N, K}, dt::f32, tag::ab}, eng); fill(W);
    memory dy({{M, N}, dt::f32, tag::ab}, eng); fill(dy);
    memory dx({{M, K}, dt::f32, tag::ab}, eng);
    for (int rep = 0; rep < 2; ++rep) {
    {
      auto pd = mk(dy.get_desc(), W.get_desc(), dx.get_desc());
      matmul mm(pd);
      double t = med([&] { mm.execute(s, {{DNNL_ARG_SRC, dy}, {DNNL_ARG_WEIGHTS, W}, {DNNL_ARG_DST, dx}}); });
      printf("K=%ld N=%ld bwd plain     %-22s %7.2f ms %6.1f GF/s\n", K, N, pd.impl_info_str(), t*1e3, fl/t/1e9);
    }
    {  // dx^T [K, M] = W^T [K, N] dy^T [N, M], then transposed into dx
      memory::desc wt({K, N}, dt::f32, tag::ba), dyt({N, M}, dt::f32, tag::ba), dxt({K, M}, dt::f32, tag::ab);
      auto pd = mk(wt, dyt, dxt);
      matmul mm(pd); memory wv(wt, eng, W.get_data_handle()), dyv(dyt, eng, dy.get_data_handle()), dxtm(dxt, eng);
      memory dxview(memory::desc({K, M}, dt::f32, tag::ba), eng, dx.get_data_handle());
      reorder tr(dxtm, dxview);
      double t = med([&] { mm.execute(s, {{DNNL_ARG_SRC, wv}, {DNNL_ARG_WEIGHTS, dyv}, {DNNL_ARG_DST, dxtm}}); });
      double t2 = med([&] { tr.execute(s, dxtm, dxview); });
      printf("K=%ld N=%ld bwd W^T as A  %-22s %7.2f ms %6.1f GF/s (+ transpose %.3f ms)\n", K, N, pd.impl_info_str(), t*1e3, fl/t/1e9, t2*1e3);
    }
    }
  }
}
