// AlexNet's fully connected layers in sinew's forms (the forward a matmul reading the plain [Out, In] weights through
// strides, the backward passes inner products on them) at batches 42 to 256: the rate each pass reaches as the
// batch, the product's short side, grows. Build: g++ -O2 -std=c++20 fc_batch.cpp -o fc_batch -ldnnl
// run: OMP_NUM_THREADS=2 OMP_PROC_BIND=close OMP_PLACES=cores ./fc_batch
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
  return r;
}
int main() {
  const memory::dim shapes[][2] = {{9216, 4096}, {4096, 4096}, {4096, 1000}};
  std::printf("batch  layer        fwd GFLOP/s  bwd data GFLOP/s  bwd weights GFLOP/s  all three GFLOP/s\n");
  for (memory::dim M : {42, 48, 64, 128, 256}) {
    double t = 0, fl = 0;
    for (auto& sh : shapes) {
      auto r = run(M, sh[0], sh[1], false);
      r.fwd = matmul_forward(M, sh[0], sh[1]);
      const double f = 2.0 * M * sh[0] * sh[1];
      std::printf("%5ld  %5ld->%-5ld %11.1f %17.1f %20.1f %18.1f\n", (long)M, (long)sh[0], (long)sh[1], f / r.fwd / 1e9,
                  f / r.bwd_data / 1e9, f / r.bwd_weights / 1e9, 3 * f / (r.fwd + r.bwd_data + r.bwd_weights) / 1e9);
      t += r.fwd + r.bwd_data + r.bwd_weights, fl += 3 * f;
    }
    std::printf("%5ld  all three layers: %.2f ms, %.1f GFLOP/s\n", (long)M, t * 1e3, fl / t / 1e9);
  }
}
