// AlexNet's fully connected layers at batch 42, each of the three passes timed in three forms: as sinew runs them
// (the forward a matmul reading the plain [Out, In] weights through strides, the backward passes inner products on
// them), all three as inner products on plain weights, and all three as inner products with the weights and their
// gradient in the layout oneDNN picks (format any), the one form in which a single blocked layout serves all three
// passes (what keeping the weights blocked between steps would run); nothing is reordered in any form.
// Build: g++ -O2 -std=c++20 fc_blocked.cpp -o fc_blocked -ldnnl
// run: OMP_NUM_THREADS=2 OMP_PROC_BIND=close OMP_PLACES=cores ./fc_blocked
#include <dnnl.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;
using ipf = inner_product_forward;
using ipd = inner_product_backward_data;
using ipw = inner_product_backward_weights;
static engine eng(engine::kind::cpu, 0);
static stream s(eng);
template <class F> double med(F f) {
  std::vector<double> t;
  for (int i = 0; i < 15; ++i) {
    auto a = std::chrono::steady_clock::now(); f(); s.wait();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
static void fill(memory& m) {
  auto* p = (float*)m.get_data_handle();
  for (size_t i = 0, n = m.get_desc().get_size() / 4; i < n; ++i) p[i] = (i % 17) * 0.01f;
}
struct passes { double fwd, bwd_data, bwd_weights; const char* impl; size_t w_bytes; };
// sinew's forward on plain weights (weighted_layer.hpp: inner_product_matmul): a matmul reading [Out, In] as its
// transpose through strides.
static double matmul_forward(memory::dim M, memory::dim K, memory::dim N) {
  memory::desc src({M, K}, dt::f32, tag::ab), w({K, N}, dt::f32, tag::ba), bias({1, N}, dt::f32, tag::ab),
      dst({M, N}, dt::f32, tag::ab);
#if DNNL_VERSION_MAJOR >= 3
  matmul::primitive_desc pd(eng, src, w, bias, dst);
#else
  matmul::primitive_desc pd(matmul::desc(src, w, bias, dst), eng);
#endif
  memory x(src, eng), W(w, eng), b(bias, eng), y(dst, eng);
  fill(x); fill(W); fill(b);
  matmul mm(pd);
  return med([&] { mm.execute(s, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, W}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, y}}); });
}
static passes run(memory::dim M, memory::dim K, memory::dim N, bool blocked) {
  memory::desc src({M, K}, dt::f32, tag::ab), dst({M, N}, dt::f32, tag::ab), bias({N}, dt::f32, tag::a);
  memory::desc w = blocked ? memory::desc({N, K}, dt::f32, tag::any) : memory::desc({N, K}, dt::f32, tag::ab);
#if DNNL_VERSION_MAJOR >= 3
  ipf::primitive_desc f(eng, prop_kind::forward_training, src, w, bias, dst);
  ipd::primitive_desc d(eng, src, f.weights_desc(), dst, f);
  ipw::primitive_desc g(eng, src, f.weights_desc(), bias, dst, f);
#else
  ipf::primitive_desc f(ipf::desc(prop_kind::forward_training, src, w, bias, dst), eng);
  ipd::primitive_desc d(ipd::desc(src, f.weights_desc(), dst), eng, f);
  ipw::primitive_desc g(ipw::desc(src, f.weights_desc(), bias, dst), eng, f);
#endif
  memory x(src, eng), y(dst, eng), dy(dst, eng), dx(src, eng), W(f.weights_desc(), eng), dW(g.diff_weights_desc(), eng);
  memory b(bias, eng), db(bias, eng);
  fill(x); fill(W); fill(dy); fill(b);
  ipf pf(f); ipd pd(d); ipw pw(g);
  passes r{};
  r.fwd = med([&] { pf.execute(s, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, W}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, y}}); });
  r.bwd_data = med([&] {
    pd.execute(s, {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WEIGHTS, W}, {DNNL_ARG_DIFF_SRC, dx}});
  });
  r.bwd_weights = med([&] {
    pw.execute(s, {{DNNL_ARG_SRC, x}, {DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DIFF_WEIGHTS, dW}, {DNNL_ARG_DIFF_BIAS, db}});
  });
  r.impl = f.impl_info_str();
  r.w_bytes = f.weights_desc().get_size();
  if (g.diff_weights_desc() != f.weights_desc()) std::printf("  (diff weights in a layout other than the weights)\n");
  return r;
}
int main() {
  const memory::dim M = 42;
  const memory::dim shapes[][2] = {{9216, 4096}, {4096, 4096}, {4096, 1000}};
  double total[3] = {0, 0, 0};
  std::printf("layer          weights  impl                      fwd ms  bwd data ms  bwd weights ms  sum ms  GFLOP/s\n");
  for (auto& sh : shapes)
    for (int form = 0; form < 3; ++form) {
      const bool blocked = form == 2;
      auto r = run(M, sh[0], sh[1], blocked);
      if (form == 0) r.fwd = matmul_forward(M, sh[0], sh[1]), r.impl = "matmul fwd (sinew)";
      double sum = r.fwd + r.bwd_data + r.bwd_weights, flop = 3 * 2.0 * M * sh[0] * sh[1];
      total[form] += sum;
      std::printf("%5ld->%-5ld  %-7s  %-24s %7.2f %12.2f %15.2f %7.2f %8.1f%s\n", (long)sh[0], (long)sh[1],
                  blocked ? "blocked" : "plain", r.impl, r.fwd * 1e3, r.bwd_data * 1e3, r.bwd_weights * 1e3,
                  sum * 1e3, flop / sum / 1e9,
                  r.w_bytes == size_t(sh[0] * sh[1] * 4) ? "" : " (padded)");
    }
  std::printf("all three layers: sinew's forms %.2f ms, inner product plain %.2f ms, blocked %.2f ms (blocked / "
              "sinew's %.2f)\n", total[0] * 1e3, total[1] * 1e3, total[2] * 1e3, total[2] / total[0]);
}
