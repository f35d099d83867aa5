// bench/results/2026-12-01-zen4-issue34-levers/onednn_winograd.cpp, a scratch program (not library code; built by
// hand: g++ -O2 -std=c++20 onednn_winograd.cpp -ldnnl against oneDNN 2 or 3, run as `./a.out BATCH IN SIZE OUT`):
// the three passes of a 3x3, stride-1, pad-1 convolution on oneDNN's direct, Winograd and "auto" algorithms, each
// the best of 5 x 10 calls; oneDNN 3 refuses the Winograd algorithm on x64 (it prints the error).
#include <dnnl.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>
#include <algorithm>
using namespace dnnl;
using tag = memory::format_tag; using dt = memory::data_type;
static engine eng(engine::kind::cpu, 0); static stream s(eng);
template <class P> double timeit(P& p, std::unordered_map<int, memory>& args) {
  for (int i = 0; i < 3; ++i) p.execute(s, args);
  s.wait(); double best = 1e9;
  for (int r = 0; r < 5; ++r) { auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 10; ++i) p.execute(s, args); s.wait();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 10); }
  return best;
}
memory mk(const memory::desc& d) { memory m(d, eng); std::fill((float*)m.get_data_handle(), (float*)m.get_data_handle() + d.get_size()/4, 0.01f); return m; }
int main(int argc, char** argv) {
  int N = atoi(argv[1]), IC = atoi(argv[2]), H = atoi(argv[3]), OC = atoi(argv[4]);
  int K = 3, S = 1, P = 1, OH = H;
  memory::dims src{N, IC, H, H}, wei{OC, IC, K, K}, bia{OC}, dst{N, OC, OH, OH};
  for (auto alg : {algorithm::convolution_direct, algorithm::convolution_winograd, algorithm::convolution_auto}) {
    try {
      memory::desc sd(src, dt::f32, tag::any), wd(wei, dt::f32, tag::any), bd(bia, dt::f32, tag::a), dd(dst, dt::f32, tag::any);
#if DNNL_VERSION_MAJOR >= 3
      convolution_forward::primitive_desc f(eng, prop_kind::forward_training, alg, sd, wd, bd, dd, {S, S}, {P, P}, {P, P});
      convolution_backward_data::primitive_desc bdp(eng, alg, sd, wd, dd, {S, S}, {P, P}, {P, P}, f);
      convolution_backward_weights::primitive_desc bw(eng, alg, sd, wd, bd, dd, {S, S}, {P, P}, {P, P}, f);
#else
      convolution_forward::primitive_desc f({prop_kind::forward_training, alg, sd, wd, bd, dd, {S, S}, {P, P}, {P, P}}, eng);
      convolution_backward_data::primitive_desc bdp({alg, sd, wd, dd, {S, S}, {P, P}, {P, P}}, eng, f);
      convolution_backward_weights::primitive_desc bw({alg, sd, wd, bd, dd, {S, S}, {P, P}, {P, P}}, eng, f);
#endif
      std::unordered_map<int, memory> a{{DNNL_ARG_SRC, mk(f.src_desc())}, {DNNL_ARG_WEIGHTS, mk(f.weights_desc())}, {DNNL_ARG_BIAS, mk(f.bias_desc())}, {DNNL_ARG_DST, mk(f.dst_desc())}};
      convolution_forward fp(f); double tf = timeit(fp, a);
      std::unordered_map<int, memory> b{{DNNL_ARG_DIFF_SRC, mk(bdp.diff_src_desc())}, {DNNL_ARG_WEIGHTS, mk(bdp.weights_desc())}, {DNNL_ARG_DIFF_DST, mk(bdp.diff_dst_desc())}};
      convolution_backward_data bp(bdp); double tb = timeit(bp, b);
      std::unordered_map<int, memory> w{{DNNL_ARG_SRC, mk(bw.src_desc())}, {DNNL_ARG_DIFF_WEIGHTS, mk(bw.diff_weights_desc())}, {DNNL_ARG_DIFF_BIAS, mk(bw.diff_bias_desc())}, {DNNL_ARG_DIFF_DST, mk(bw.diff_dst_desc())}};
      convolution_backward_weights wp(bw); double tw = timeit(wp, w);
      double gf = 2.0 * N * OC * IC * 9 * OH * OH / 1e6;
      std::printf("%d->%d %dx%d %-6s fwd %-22s %.3f  bwd_d %-22s %.3f  bwd_w %-22s %.3f  sum %.3f ms (%.0f GF/s direct-equiv)\n", IC, OC, H, H,
        alg == algorithm::convolution_direct ? "direct" : alg == algorithm::convolution_auto ? "auto" : "wino", f.impl_info_str(), tf, bdp.impl_info_str(), tb, bw.impl_info_str(), tw, tf+tb+tw, 3*gf/(tf+tb+tw));
    } catch (const dnnl::error& e) { std::printf("%s: %s\n", alg == algorithm::convolution_direct ? "direct" : "wino", e.what()); }
  }
}
