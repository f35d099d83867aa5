// AlexNet's first convolution (3 -> 64 channels, 11x11 at stride 4, padding 2, 64x64 -> 15x15, fused ReLU) at batch
// 42, forward only, in two forms: oneDNN's convolution as sinew runs it (formats left to oneDNN; under oneDNN 2.6
// capped to AVX2 that is its gemm-based convolution, x64:gemm:jit), and lowered: the patches gathered from the NCHW
// input into a [42*15*15, 3*11*11] matrix (rows of 11 contiguous floats per channel and kernel row) and oneDNN's
// inner product on them (NHWC output). Each round times both, one after the other, as medians of 25 executions.
// Build: g++ -O2 -fopenmp -std=c++17 first_layer.cpp -o first_layer -ldnnl; run: OMP_NUM_THREADS=2 ./first_layer
#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

template <class F>
double median_seconds(F f) {
  std::vector<double> ts;
  for (int i = 0; i < 25; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    ts.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}

int main() {
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  constexpr int B = 42, C = 3, H = 64, W = 64, O = 64, K = 11, S = 4, P = 2, OH = 15, OW = 15;
  constexpr long R = long(B) * OH * OW, KK = C * K * K;
  const double flops = 2.0 * R * KK * O;
  post_ops po;
  po.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
  primitive_attr relu;
  relu.set_post_ops(po);

  // Direct: oneDNN's convolution, every format `any` (sinew's conv2d_op).
  const memory::desc src_any({B, C, H, W}, dt::f32, tag::any), w_any({O, C, K, K}, dt::f32, tag::any),
      bias({O}, dt::f32, tag::x), dst_any({B, O, OH, OW}, dt::f32, tag::any);
  const auto conv_pd = convolution_forward::primitive_desc(
      convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct, src_any, w_any, bias,
                                dst_any, {S, S}, {P, P}, {P, P}),
      relu, eng);
  memory cs(conv_pd.src_desc(), eng), cw(conv_pd.weights_desc(), eng), cb(conv_pd.bias_desc(), eng),
      cd(conv_pd.dst_desc(), eng);
  std::fill_n(static_cast<float*>(cs.get_data_handle()), conv_pd.src_desc().get_size() / 4, 0.5f);
  convolution_forward conv(conv_pd);

  // Lowered: gather, then the inner product [R, KK] x [O, KK]^T.
  std::vector<float> x(std::size_t(B) * C * H * W, 0.5f);
  const memory::desc patches_md({R, KK}, dt::f32, tag::nc), w_md({O, KK}, dt::f32, tag::oi),
      out_md({R, O}, dt::f32, tag::nc);
  const auto ip_pd = inner_product_forward::primitive_desc(
      inner_product_forward::desc(prop_kind::forward_training, patches_md, w_md, bias, out_md), relu, eng);
  memory patches(patches_md, eng), iw(w_md, eng), ib(bias, eng), out(out_md, eng);
  float* pat = static_cast<float*>(patches.get_data_handle());
  std::memset(pat, 0, std::size_t(R * KK) * 4);  // taps in the padding stay zero
  inner_product_forward ip(ip_pd);
  const auto gather = [&] {
#pragma omp parallel for schedule(static)
    for (long r = 0; r < R; ++r) {
      const int b = int(r / (OH * OW)), p = int(r % (OH * OW)), oy = p / OW, ox = p % OW;
      const int ix0 = ox * S - P, lo = std::max(0, -ix0), hi = std::min(K, W - ix0);
      for (int c = 0; c < C; ++c)
        for (int ky = 0; ky < K; ++ky) {
          const int iy = oy * S - P + ky;
          if (iy < 0 || iy >= H) continue;
          const float* src = x.data() + ((std::size_t(b) * C + c) * H + iy) * W;
          std::memcpy(pat + r * KK + (c * K + ky) * K + lo, src + ix0 + lo, std::size_t(hi - lo) * 4);
        }
    }
  };

  const double t_direct = median_seconds([&] {
    conv.execute(s, {{DNNL_ARG_SRC, cs}, {DNNL_ARG_WEIGHTS, cw}, {DNNL_ARG_BIAS, cb}, {DNNL_ARG_DST, cd}});
    s.wait();
  });
  const double t_gather = median_seconds(gather);
  const double t_product = median_seconds([&] {
    ip.execute(s, {{DNNL_ARG_SRC, patches}, {DNNL_ARG_WEIGHTS, iw}, {DNNL_ARG_BIAS, ib}, {DNNL_ARG_DST, out}});
    s.wait();
  });
  std::printf("direct %-16s %5.2f ms %6.1f GF/s | lowered: gather %5.2f ms + %-16s %5.2f ms = %5.2f ms\n",
              conv_pd.impl_info_str(), t_direct * 1e3, flops / t_direct / 1e9, t_gather * 1e3, ip_pd.impl_info_str(),
              t_product * 1e3, (t_gather + t_product) * 1e3);
}
