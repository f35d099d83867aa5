// Would an SGD update fused into AlexNet's fully connected backward pass bring its step nearer the peak? Times, in
// one run on the same threads, each of AlexNet 64x64's three fully connected layers (9216->4096, 4096->4096,
// 4096->1000) at batch 42: the weights' gradient (dW = dY^T X, 42 rows deep) followed by the momentum SGD update of
// the layer (momentum 0.9, weight decay 5e-4; it reads the weights, gradient and momentum and writes the weights
// and momentum), in four forms:
//   ip      oneDNN's inner product backward weights into the layer's gradient (sinew's form), then the update;
//   mm      the same product as one oneDNN matmul, then the update;
//   blockR  the product in blocks of R output rows, each into its rows of the gradient, each block's update right
//           after it (the gradient is read back from the cache);
//   scrR    the same blocks, each written into one scratch of R rows that stays in the cache and updated from it:
//           no gradient array at all (what an optimizer applied inside backward without keeping .grad does).
// The update is the same loop in every form. The last block of the 1000-row layer overlaps the one before it.
// Build (from the repository root; oneDNN 2.6 or 3.x): g++ -O3 -march=native -fopenmp -std=c++20
//   bench/results/2026-12-06-zen5-update-in-backward/fc_fused.cpp -o /tmp/fc_fused -ldnnl
// Run: OMP_NUM_THREADS=2 /tmp/fc_fused  (explore-d12.txt: the same with blocks of 8, 16, 32 and 64 rows)
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

// p, v updated from g over n floats (torch.optim.SGD's arithmetic, as optim::Sgd after its first step).
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

struct layer {
  int in, out;
};

int main() {
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  const int B = 42;
  const layer layers[] = {{9216, 4096}, {4096, 4096}, {4096, 1000}};
  const int blocks[] = {64, 128, 256, 512};
  std::printf("threads %d, batch %d; ms per step summed over the three layers (median of 15)\n", omp_get_max_threads(), B);
  for (int round = 0; round < 3; ++round) {
    double t_ip = 0, t_mm = 0, t_upd = 0, t_blk[4] = {}, t_scr[4] = {};
    for (const layer& L : layers) {
      const std::size_t n = std::size_t(L.out) * L.in;
      float *w = alloc(n), *g = alloc(n), *v = alloc(n), *x = alloc(std::size_t(B) * L.in),
            *dy = alloc(std::size_t(B) * L.out), *scratch = alloc(std::size_t(512) * L.in);
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
      // ip: inner product backward weights on the plain [out, in] weights.
      const memory::desc x_md({B, L.in}, dt::f32, tag::nc), dy_md({B, L.out}, dt::f32, tag::nc),
          w_md({L.out, L.in}, dt::f32, tag::oi);
#if DNNL_VERSION_MAJOR >= 3
      auto fwd = inner_product_forward::primitive_desc(eng, prop_kind::forward_training, x_md, w_md, dy_md);
      auto ipbw = inner_product_backward_weights::primitive_desc(eng, x_md, w_md, dy_md, fwd);
#else
      auto fwd = inner_product_forward::primitive_desc({prop_kind::forward_training, x_md, w_md, dy_md}, eng);
      auto ipbw = inner_product_backward_weights::primitive_desc({x_md, w_md, dy_md}, eng, fwd);
#endif
      inner_product_backward_weights ip(ipbw);
      memory xm(x_md, eng, x), dym(dy_md, eng, dy), gm(w_md, eng, g);
      t_ip += median([&] {
        ip.execute(s, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DIFF_DST, dym}, {DNNL_ARG_DIFF_WEIGHTS, gm}});
        s.wait();
        update(w, g, v, n);
      });
      t_upd += median([&] { update(w, g, v, n); });
      // A matmul dW[r0:r0+R, :] = dY[:, r0:r0+R]^T X for R rows; its output row stride is the layer's inputs.
      auto matmul_for = [&](int R) {
        const memory::desc a({R, B}, dt::f32, memory::dims{1, L.out}), b({B, L.in}, dt::f32, memory::dims{L.in, 1}),
            c({R, L.in}, dt::f32, memory::dims{L.in, 1});
#if DNNL_VERSION_MAJOR >= 3
        return std::make_tuple(matmul(matmul::primitive_desc(eng, a, b, c)), a, b, c);
#else
        return std::make_tuple(matmul(matmul::primitive_desc({a, b, c}, eng)), a, b, c);
#endif
      };
      {
        auto [mm, a, b, c] = matmul_for(L.out);
        memory am(a, eng, dy), bm(b, eng, x), cm(c, eng, g);
        t_mm += median([&] {
          mm.execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
          s.wait();
          update(w, g, v, n);
        });
      }
      for (int k = 0; k < 4; ++k) {
        const int R = blocks[k];
        auto [mm, a, b, c] = matmul_for(R);
        memory am(a, eng, dy), bm(b, eng, x), cm(c, eng, g);
        const std::size_t rows = std::size_t(R) * L.in;
        t_blk[k] += median([&] {
          for (int r = 0; r < L.out; r += R) {
            const int r0 = std::min(r, L.out - R);  // 1000 rows: the last block overlaps the one before
            am.set_data_handle(dy + r0);
            cm.set_data_handle(g + std::size_t(r0) * L.in);
            mm.execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
            s.wait();
            const std::size_t at = std::size_t(r0) * L.in;
            update(w + at, g + at, v + at, rows);
          }
        });
        t_scr[k] += median([&] {
          cm.set_data_handle(scratch);
          for (int r = 0; r < L.out; r += R) {
            const int r0 = std::min(r, L.out - R);  // 1000 rows: the last block overlaps the one before
            am.set_data_handle(dy + r0);
            mm.execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
            s.wait();
            const std::size_t at = std::size_t(r0) * L.in;
            update(w + at, scratch, v + at, rows);
          }
        });
      }
      for (float* p : {w, g, v, x, dy, scratch}) std::free(p);
    }
    std::printf("round %d: ip+update %.2f  (update alone %.2f)  mm+update %.2f", round + 1, t_ip, t_upd, t_mm);
    for (int k = 0; k < 4; ++k) std::printf("  block%d %.2f", blocks[k], t_blk[k]);
    for (int k = 0; k < 4; ++k) std::printf("  scr%d %.2f", blocks[k], t_scr[k]);
    std::printf("\n");
  }
}
