// bench/results/2026-12-01-zen4-issue34-levers/blocked_weights.cpp, a scratch program (not library code; built by
// hand: g++ -O2 -std=c++20 blocked_weights.cpp -ldnnl against oneDNN 3, run as `./a.out IN OUT`): the three passes
// of one inner product at batch 42 with its weights in oneDNN's own layout (tag::any) and in PyTorch's row-major
// one (tag::ab), and the reorder between the two, each the best of 5 x 5 calls.
#include <dnnl.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>
#include <algorithm>
using namespace dnnl;
using tag = memory::format_tag; using dt = memory::data_type;
static engine eng(engine::kind::cpu, 0); static stream s(eng);
memory mk(const memory::desc& d) { memory m(d, eng); std::fill((float*)m.get_data_handle(), (float*)m.get_data_handle() + d.get_size()/4, 0.01f); return m; }
template <class P> double timeit(P& p, std::unordered_map<int, memory>& args) {
    for (int i = 0; i < 3; ++i) p.execute(s, args);
    s.wait(); double best = 1e9;
    for (int r = 0; r < 5; ++r) { auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 5; ++i) p.execute(s, args); s.wait();
      best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 5); }
    return best;
}
int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IONBF, 0);
  const memory::dim N = 42, I = atoi(argv[1]), O = atoi(argv[2]);
  double fl = 2.0 * N * I * O;
  // inner product with weights any
  for (auto wt : {tag::any, tag::ab}) {
    memory::desc src({N, I}, dt::f32, tag::ab), w({O, I}, dt::f32, wt), b({O}, dt::f32, tag::a), dst({N, O}, dt::f32, tag::ab);
    inner_product_forward::primitive_desc f(eng, prop_kind::forward_training, src, w, b, dst);
    inner_product_backward_data::primitive_desc bd(eng, src, w, dst, f);
    inner_product_backward_weights::primitive_desc bw(eng, src, w, b, dst, f);
    std::unordered_map<int, memory> a{{DNNL_ARG_SRC, mk(f.src_desc())}, {DNNL_ARG_WEIGHTS, mk(f.weights_desc())}, {DNNL_ARG_BIAS, mk(f.bias_desc())}, {DNNL_ARG_DST, mk(f.dst_desc())}};
    inner_product_forward fp(f); double tf = timeit(fp, a);
    std::unordered_map<int, memory> c{{DNNL_ARG_DIFF_SRC, mk(bd.diff_src_desc())}, {DNNL_ARG_WEIGHTS, mk(bd.weights_desc())}, {DNNL_ARG_DIFF_DST, mk(bd.diff_dst_desc())}};
    inner_product_backward_data bp(bd); double tb = timeit(bp, c);
    std::unordered_map<int, memory> d{{DNNL_ARG_SRC, mk(bw.src_desc())}, {DNNL_ARG_DIFF_WEIGHTS, mk(bw.diff_weights_desc())}, {DNNL_ARG_DIFF_BIAS, mk(bw.diff_bias_desc())}, {DNNL_ARG_DIFF_DST, mk(bw.diff_dst_desc())}};
    inner_product_backward_weights wp(bw); double tw = timeit(wp, d);
    // reorder plain->chosen
    memory plain = mk(memory::desc({O, I}, dt::f32, tag::ab)); memory blk = mk(f.weights_desc());
    reorder r(plain, blk); std::unordered_map<int, memory> ra{{DNNL_ARG_FROM, plain}, {DNNL_ARG_TO, blk}}; double tr = timeit(r, ra);
    std::printf("ip w=%s fwd %s %.2f ms %.0f  bwd_d %s %.2f ms %.0f  bwd_w %s %.2f ms %.0f  same-layout-as-fwd: bd %d bw %d  reorder %.2f ms\n",
      wt == tag::any ? "any" : "ab", f.impl_info_str(), tf, fl/tf/1e6, bd.impl_info_str(), tb, fl/tb/1e6, bw.impl_info_str(), tw, fl/tw/1e6,
      bd.weights_desc() == f.weights_desc(), bw.diff_weights_desc() == f.weights_desc(), tr);
  }
}
