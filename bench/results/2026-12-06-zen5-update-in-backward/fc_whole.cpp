// The whole backward of AlexNet's fully connected layers with the SGD update fused, block by block of output rows:
// does reading each block of the weights once (for the input gradient and the update) and never writing the
// weights' gradient pay? Times each of AlexNet 64x64's three fully connected layers (9216->4096, 4096->4096,
// 4096->1000) at batch 42, summed, in one run:
//   sinew   oneDNN's inner product backward data (dX = dY W) and backward weights (dW = dY^T X) on the plain
//           [out, in] weights, then the momentum SGD update of the layer (momentum 0.9, weight decay 5e-4);
//   wholeR  for each block of R output rows: dW's rows into one scratch that stays in the cache (a matmul),
//           dX += dY[:, rows] W[rows, :] (a matmul adding into dX), then the update of those rows from the scratch,
//           while the block of W is in the cache.
// The update is the same loop in both. Build (oneDNN 2.6 or 3.x): g++ -O3 -march=native -fopenmp -std=c++20
//   bench/results/2026-12-06-zen5-update-in-backward/fc_whole.cpp -o /tmp/fc_whole -ldnnl (from the repository root)
// Run: OMP_NUM_THREADS=2 /tmp/fc_whole
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dnnl.hpp>
#include <vector>

using namespace dnnl;
using clk = std::chrono::steady_clock;
using tag = memory::format_tag;
using dt = memory::data_type;

static float* alloc(std::size_t n) {
  float* p = static_cast<float*>(std::aligned_alloc(64, (n * 4 + 63) / 64 * 64));
  for (std::size_t i = 0; i < n; ++i) p[i] = 1e-3f * float(i % 997);
  return p;
}

static void update(float* __restrict p, const float* __restrict g, float* __restrict v, std::size_t n) {
  const float lr = 0.01f, wd = 5e-4f, mu = 0.9f;
#pragma omp parallel for simd schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    const float d = wd * p[i] + g[i];
    const float b = mu * v[i] + d;
    v[i] = b;
    p[i] = p[i] - lr * b;
  }
}

static matmul make_matmul(const engine& eng, const memory::desc& a, const memory::desc& b, const memory::desc& c,
                          bool add) {
  primitive_attr attr;
  if (add) {
    post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
#if DNNL_VERSION_MAJOR >= 3
  return matmul(matmul::primitive_desc(eng, a, b, c, attr));
#else
  return matmul(matmul::primitive_desc({a, b, c}, attr, eng));
#endif
}

int main() {
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  const int B = 42;
  const int layers[][2] = {{9216, 4096}, {4096, 4096}, {4096, 1000}};
  const int blocks[] = {64, 128, 256};
  std::printf("threads %d, batch %d; ms per step summed over the three layers (median of 15)\n", omp_get_max_threads(), B);
  for (int round = 0; round < 3; ++round) {
    double t_sinew = 0, t_data = 0, t_weights = 0, t_upd = 0, t_whole[3] = {};
    for (const auto& L : layers) {
      const int in = L[0], out = L[1];
      const std::size_t n = std::size_t(out) * in;
      float *w = alloc(n), *g = alloc(n), *v = alloc(n), *x = alloc(std::size_t(B) * in),
            *dx = alloc(std::size_t(B) * in), *dy = alloc(std::size_t(B) * out), *scratch = alloc(std::size_t(256) * in);
      auto median = [](auto&& f) {
        std::vector<double> t;
        for (int r = 0; r < 15; ++r) {
          const auto a = clk::now();
          f();
          t.push_back(std::chrono::duration<double, std::milli>(clk::now() - a).count());
        }
        std::sort(t.begin(), t.end());
        return t[t.size() / 2];
      };
      const memory::desc x_md({B, in}, dt::f32, tag::nc), dy_md({B, out}, dt::f32, tag::nc),
          w_md({out, in}, dt::f32, tag::oi);
#if DNNL_VERSION_MAJOR >= 3
      auto fwd = inner_product_forward::primitive_desc(eng, prop_kind::forward_training, x_md, w_md, dy_md);
      auto bd = inner_product_backward_data::primitive_desc(eng, x_md, w_md, dy_md, fwd);
      auto bw = inner_product_backward_weights::primitive_desc(eng, x_md, w_md, dy_md, fwd);
#else
      auto fwd = inner_product_forward::primitive_desc({prop_kind::forward_training, x_md, w_md, dy_md}, eng);
      auto bd = inner_product_backward_data::primitive_desc({x_md, w_md, dy_md}, eng, fwd);
      auto bw = inner_product_backward_weights::primitive_desc({x_md, w_md, dy_md}, eng, fwd);
#endif
      inner_product_backward_data ipd(bd);
      inner_product_backward_weights ipw(bw);
      memory xm(x_md, eng, x), dxm(x_md, eng, dx), dym(dy_md, eng, dy), wm(w_md, eng, w), gm(w_md, eng, g);
      auto data = [&] {
        ipd.execute(s, {{DNNL_ARG_DIFF_DST, dym}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DIFF_SRC, dxm}});
        s.wait();
      };
      auto weights = [&] {
        ipw.execute(s, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DIFF_DST, dym}, {DNNL_ARG_DIFF_WEIGHTS, gm}});
        s.wait();
      };
      t_sinew += median([&] {
        data();
        weights();
        update(w, g, v, n);
      });
      t_data += median(data);
      t_weights += median(weights);
      t_upd += median([&] { update(w, g, v, n); });
      for (int k = 0; k < 3; ++k) {
        const int R = blocks[k];
        // dW[rows] = dY[:, rows]^T X: [R, B] (dY's columns, read through strides) x [B, in] -> scratch [R, in]
        const memory::desc dyt({R, B}, dt::f32, memory::dims{1, out}), xs({B, in}, dt::f32, memory::dims{in, 1}),
            gs({R, in}, dt::f32, memory::dims{in, 1});
        // dX (+)= dY[:, rows] W[rows]: [B, R] x [R, in] -> [B, in]
        const memory::desc dyb({B, R}, dt::f32, memory::dims{out, 1}), wb({R, in}, dt::f32, memory::dims{in, 1}),
            dxs({B, in}, dt::f32, memory::dims{in, 1});
        matmul mw = make_matmul(eng, dyt, xs, gs, false), md0 = make_matmul(eng, dyb, wb, dxs, false),
               md1 = make_matmul(eng, dyb, wb, dxs, true);
        memory dytm(dyt, eng, dy), xsm(xs, eng, x), gsm(gs, eng, scratch), dybm(dyb, eng, dy), wbm(wb, eng, w),
            dxsm(dxs, eng, dx);
        t_whole[k] += median([&] {
          for (int r = 0; r < out; r += R) {
            const int r0 = std::min(r, out - R);  // 1000 rows: the last block overlaps the one before (timing only)
            const std::size_t at = std::size_t(r0) * in;
            dytm.set_data_handle(dy + r0);
            mw.execute(s, {{DNNL_ARG_SRC, dytm}, {DNNL_ARG_WEIGHTS, xsm}, {DNNL_ARG_DST, gsm}});
            dybm.set_data_handle(dy + r0);
            wbm.set_data_handle(w + at);
            (r == 0 ? md0 : md1).execute(s, {{DNNL_ARG_SRC, dybm}, {DNNL_ARG_WEIGHTS, wbm}, {DNNL_ARG_DST, dxsm}});
            s.wait();
            update(w + at, scratch, v + at, std::size_t(R) * in);
          }
        });
      }
      for (float* p : {w, g, v, x, dx, dy, scratch}) std::free(p);
    }
    std::printf("round %d: sinew %.2f (backward data %.2f, weights %.2f, update %.2f)", round + 1, t_sinew, t_data,
                t_weights, t_upd);
    for (int k = 0; k < 3; ++k) std::printf("  whole%d %.2f", blocks[k], t_whole[k]);
    std::printf("\n");
  }
}
