// Does memory bound AlexNet's fully connected layers at batch 42? Times, in one run on the same threads, (1) the
// memory alone: reading 234.6 MB (the three layers' weights: 9216->4096, 4096->4096, 4096->1000) and writing as
// many bytes, with plain and with streaming stores; (2) sinew's forms of the three layers' passes, as
// ../2026-12-03-zen5-fc-blocked-weights/fc_batch.cpp runs them (forward: a matmul reading the plain [Out, In]
// weights through strides; backward data and weights: inner products on them), at batches 42 and 128. Each pass
// must stream its weights (or write their gradient) once per step: W is read by the forward and the backward data,
// dW written by the backward weights, so the step's floor is two reads and one write of 234.6 MB.
// Build: g++ -O3 -march=native -fopenmp -std=c++20 floor.cpp -o floor -ldnnl
// Run:   OMP_NUM_THREADS=2 OMP_PROC_BIND=close OMP_PLACES=cores ./floor
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dnnl.hpp>
#include <vector>

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;
static engine eng(engine::kind::cpu, 0);
static stream s(eng);

template <class F>
double median_seconds(F f, int calls = 15) {
  std::vector<double> t;
  for (int i = 0; i < calls; ++i) {
    const auto a = std::chrono::steady_clock::now();
    f();
    s.wait();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

static void fill(memory& m) {
  auto* p = static_cast<float*>(m.get_data_handle());
  for (size_t i = 0, n = m.get_desc().get_size() / 4; i < n; ++i) p[i] = float(i % 17) * 0.01f;
}

int main() {
  const long layers[3][2] = {{9216, 4096}, {4096, 4096}, {4096, 1000}};
  size_t floats = 0;
  for (auto& l : layers) floats += size_t(l[0] * l[1]);
  const double bytes = double(floats) * 4;
  auto* a = static_cast<float*>(std::aligned_alloc(64, floats * 4));
  auto* b = static_cast<float*>(std::aligned_alloc(64, floats * 4));
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < floats; ++i) a[i] = b[i] = float(i % 13);
  volatile float sink = 0;
  const size_t vecs = floats / 16;
  const double read = median_seconds([&] {
    float total = 0;
#pragma omp parallel for schedule(static) reduction(+ : total)
    for (size_t v = 0; v < vecs; v += 4) {
      __m512 s0 = _mm512_load_ps(a + 16 * v), s1 = _mm512_load_ps(a + 16 * v + 16),
             s2 = _mm512_load_ps(a + 16 * v + 32), s3 = _mm512_load_ps(a + 16 * v + 48);
      total += _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
    }
    sink = sink + total;
  });
  const double write = median_seconds([&] {
#pragma omp parallel for schedule(static)
    for (size_t v = 0; v < vecs; ++v) _mm512_store_ps(b + 16 * v, _mm512_set1_ps(float(v & 7)));
  });
  const double stream_write = median_seconds([&] {
#pragma omp parallel for schedule(static)
    for (size_t v = 0; v < vecs; ++v) _mm512_stream_ps(b + 16 * v, _mm512_set1_ps(float(v & 7)));
    _mm_sfence();
  });
  std::printf("threads %d, %.1f MB: read %.2f ms (%.1f GB/s), write %.2f ms (%.1f GB/s), streaming write %.2f ms "
              "(%.1f GB/s)\n",
              omp_get_max_threads(), bytes / 1e6, read * 1e3, bytes / read / 1e9, write * 1e3, bytes / write / 1e9,
              stream_write * 1e3, bytes / stream_write / 1e9);
  const double floor_plain = 2 * read + write, floor_stream = 2 * read + stream_write;
  std::printf("floor of a step (two reads, one write): %.2f ms with plain stores, %.2f ms streaming\n",
              floor_plain * 1e3, floor_stream * 1e3);
  std::free(a);
  std::free(b);

  for (const long batch : {42L, 128L}) {
    double total = 0, flops = 0;
    for (auto& l : layers) {
      const long in = l[0], out = l[1];
      memory::desc x_md({batch, in}, dt::f32, tag::ab), y_md({batch, out}, dt::f32, tag::ab);
      memory::desc w_mm({in, out}, dt::f32, tag::ba);  // [Out, In] row-major seen as [In, Out]
      memory::desc w_ip({out, in}, dt::f32, tag::ab), b_md({out}, dt::f32, tag::a);
      memory x(x_md, eng), y(y_md, eng), dy(y_md, eng), dx(x_md, eng), w(w_ip, eng), dw(w_ip, eng), bias(b_md, eng),
          db(b_md, eng);
      fill(x), fill(dy), fill(w), fill(bias);
      memory w_as_mm(w_mm, eng, w.get_data_handle());
#if DNNL_VERSION_MAJOR >= 3
      matmul::primitive_desc fpd(eng, x_md, w_mm, y_md);
      inner_product_forward::primitive_desc hint(eng, prop_kind::forward_training, x_md, w_ip, b_md, y_md);
      inner_product_backward_data::primitive_desc dpd(eng, x_md, w_ip, y_md, hint);
      inner_product_backward_weights::primitive_desc wpd(eng, x_md, w_ip, b_md, y_md, hint);
#else
      matmul::primitive_desc fpd(matmul::desc(x_md, w_mm, y_md), eng);
      inner_product_forward::primitive_desc hint(
          inner_product_forward::desc(prop_kind::forward_training, x_md, w_ip, b_md, y_md), eng);
      inner_product_backward_data::primitive_desc dpd(inner_product_backward_data::desc(x_md, w_ip, y_md), eng, hint);
      inner_product_backward_weights::primitive_desc wpd(
          inner_product_backward_weights::desc(x_md, w_ip, b_md, y_md), eng, hint);
#endif
      matmul fwd(fpd);
      inner_product_backward_data bwd(dpd);
      inner_product_backward_weights bww(wpd);
      const double tf = median_seconds([&] {
        fwd.execute(s, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w_as_mm}, {DNNL_ARG_DST, y}});
      });
      const double td = median_seconds([&] {
        bwd.execute(s, {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DIFF_SRC, dx}});
      });
      const double tw = median_seconds([&] {
        bww.execute(s, {{DNNL_ARG_SRC, x}, {DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DIFF_WEIGHTS, dw},
                        {DNNL_ARG_DIFF_BIAS, db}});
      });
      const double wbytes = double(in) * out * 4;
      std::printf("batch %3ld %5ld->%-5ld fwd %6.2f ms (%5.1f GB/s of weights) bwd data %6.2f ms (%5.1f) bwd weights "
                  "%6.2f ms (%5.1f)  [%s | %s | %s]\n",
                  batch, in, out, tf * 1e3, wbytes / tf / 1e9, td * 1e3, wbytes / td / 1e9, tw * 1e3,
                  wbytes / tw / 1e9, fpd.impl_info_str(), dpd.impl_info_str(), wpd.impl_info_str());
      total += tf + td + tw;
      flops += 3 * 2.0 * double(batch) * in * out;
    }
    std::printf("batch %3ld all three layers: %.2f ms, %.1f GFLOP/s; floor from memory %.2f ms (%.0f%% of the time)\n",
                batch, total * 1e3, flops / total / 1e9, floor_plain * 1e3, 100 * floor_plain / total);
  }
}
